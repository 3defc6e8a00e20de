#!/bin/sh
# Create the federation CA and the certificates of hospital-a/b/c and the leader in deploy/certs.
# Safe to rerun: the CA is created once, and a name is issued only when its .crt is missing (to
# rotate one, delete certs/NAME.crt and certs/NAME.key and rerun; see README.md).
# Needs no activated venv: fedanon-command.sh finds the repository's .venv (or python3); FEDANON
# or PYTHON select another, e.g. FEDANON="/opt/fedanon/bin/fedanon" ./make-certs.sh
set -eu
cd "$(dirname "$0")"
. ./fedanon-command.sh
DIR=certs
IMAGE_UID=10001                  # the non-root user of deploy/Dockerfile

[ -f "$DIR/ca.key" ] || $FEDANON certs init --dir "$DIR"
for name in hospital-a hospital-b hospital-c; do
    [ -f "$DIR/$name.crt" ] || $FEDANON certs issue "$name" --dir "$DIR" --role party
done
[ -f "$DIR/leader.crt" ] || $FEDANON certs issue leader --dir "$DIR" --role leader

# Keys are 0600, so the containers must run as their owner. Run as root, hand the four service
# keys (never ca.key) to the image's user; otherwise run the containers as the caller.
if [ "$(id -u)" = 0 ]; then
    for name in hospital-a hospital-b hospital-c leader; do
        chown "$IMAGE_UID:$IMAGE_UID" "$DIR/$name.key" "$DIR/$name.crt"
    done
    uid=$IMAGE_UID gid=$IMAGE_UID
else
    uid=$(id -u) gid=$(id -g)
fi
printf 'FEDANON_UID=%s\nFEDANON_GID=%s\n' "$uid" "$gid" > .env   # read by docker compose
echo "certificates in $(pwd)/$DIR; containers will run as uid $uid (deploy/.env)"
echo "keep $DIR/ca.key offline: no container needs it"
