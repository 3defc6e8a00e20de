"""The job kinds this party daemon serves: one handler each, keyed by the job field's name.

Adding a job kind: a ``oneof job`` field in protos/fedanon_v1.proto, a handler module here
registered below, and the leader module that drives it (docs/architecture.md).
"""

from fedanon.party.handler import JobHandler
from fedanon.party.handlers import c45, drbt, evaluate, kactus, lkc, randomize

HANDLERS: dict[str, JobHandler] = {
    handler.kind: handler
    for handler in (
        lkc.HANDLER,
        drbt.HANDLER,
        randomize.HANDLER,
        c45.HANDLER,
        kactus.HANDLER,
        evaluate.HANDLER,
    )
}
