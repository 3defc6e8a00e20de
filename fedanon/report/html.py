"""The release report as one self-contained HTML page: no scripts, no network, inline SVG charts.

Every figure that comes from the JSON report is wrapped in an element carrying
``data-field="<dotted path into the report>"``, so a test (or a steward's script) can check
the rendered page against the JSON it came from.
"""

from __future__ import annotations

import html
from typing import Any

from fedanon.report.display import count, percent, plain

_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:60em;
color:#1d2329;line-height:1.45;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;
border-bottom:1px solid #d0d7de;padding-bottom:.2em}
table{border-collapse:collapse;margin:.4em 0}td,th{padding:.25em .7em;text-align:left;
border-bottom:1px solid #eaeef2;vertical-align:top}th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.verdict{font-size:1.2em;font-weight:bold;padding:.5em .8em;border-radius:6px;display:inline-block}
.holds{background:#dafbe1;color:#116329}.violated{background:#ffebe9;color:#a40e26}
.unchecked{background:#fff8c5;color:#7d4e00}.muted{color:#57606a;font-size:.9em}
.limited{background:#fff1b8;color:#7d4e00}
.warning{background:#ffd8b5;border:2px solid #bc4c00;color:#3d1300;border-radius:6px;
padding:.6em 1em;margin:.6em 0}.warning b{color:#a40e26}
code{background:#f6f8fa;padding:0 .3em;border-radius:3px}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _field(path: str, text: str) -> str:
    return f'<span data-field="{_e(path)}">{_e(text)}</span>'


def _rows(pairs: list[tuple[str, str]]) -> str:
    return "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in pairs)


def _job(report: dict[str, Any]) -> str:
    job = report["job"]
    params = ", ".join(f"{k} = {plain(v)}" for k, v in job["parameters"].items())
    inputs = (
        "<br>".join(
            f"<code>{_e(i['path'])}</code> <span class='muted'>SHA-256 "
            f"{_e(i['sha256'] or 'n/a (a directory)')}</span>"
            for i in job["inputs"]
        )
        or "<span class='muted'>held by the parties</span>"
    )
    pairs = [
        ("command", f"<code>{_e(job['command'])}</code>"),
        ("method", _e(job["method"])),
        ("parameters", _e(params)),
        ("inputs", inputs),
        ("records released", _field("records", count(report["records"]))),
        ("fedanon version", _e(job["fedanon_version"])),
        ("created (UTC)", _e(job["created"])),
    ]
    return f"<h2>Job</h2><table>{_rows(pairs)}</table>{_parties(job['parties'])}"


def _parties(parties: list[dict[str, Any]]) -> str:
    if not parties:
        return ""
    cells = "".join(
        f"<tr><td>{_e(p['name'])}</td><td class='num'>"
        + (
            _field(f"job.parties.{i}.records", count(p["records"]))
            if p["records"] is not None
            else "<span class='muted'>not revealed by this job</span>"
        )
        + "</td></tr>"
        for i, p in enumerate(parties)
    )
    return f"<table><tr><th>party</th><th>records</th></tr>{cells}</table>"


def _verdict(report: dict[str, Any]) -> str:
    """The badge, for whom it holds and, right under it, every warning over all QIDs."""
    verdict = report["privacy_check"]["verdict"]
    assessment = report.get("assessment")
    warnings = assessment["warnings"] if assessment else []
    css = {"holds": "holds", "violated": "violated"}.get(verdict, "unchecked")
    if verdict == "holds" and warnings:
        css = "limited"  # holds for the checked attacker only: never a plain green
    details = report["privacy_check"]["details"] or {}
    scope = ""
    if "L" in details:
        scope = (
            f" <span class='muted'>(independent brute-force check of L = {details['L']}, "
            f"K = {details['K']}, C = {details['C']['fraction']} over "
            f"{count(details['subsets_checked'])} QID subsets)</span>"
        )
    elif "alpha" in details:
        scope = (
            " <span class='muted'>(independent check of (alpha,k)-anonymity, alpha = "
            f"{details['alpha']['fraction']}, k = {details['k']})</span>"
        )
    elif "k" in details:
        scope = (
            f" <span class='muted'>(independent check of k-anonymity, k = {details['k']})</span>"
        )
    holds_for = ""
    if assessment:
        verb = "holds for" if verdict == "holds" else "checked for"
        holds_for = f"<p>{verb} {_field('assessment.holds_for', assessment['holds_for'])}</p>"
    alerts = "".join(
        f"<div class='warning' role='alert'><b>Warning:</b> "
        f"{_field(f'assessment.warnings.{i}.message', w['message'])}</div>"
        for i, w in enumerate(warnings)
    )
    return (
        f"<h2>Privacy check</h2><p><span class='verdict {css}'>"
        f"{_field('privacy_check.verdict', verdict)}</span>{scope}</p>{holds_for}{alerts}"
    )


def _next(report: dict[str, Any]) -> str:
    """What to do next, each attribute before and after, the release's digest and command."""
    assessment = report.get("assessment")
    if not assessment:
        return ""
    steps = "".join(
        f"<li>{_field(f'assessment.next_steps.{i}', step)}</li>"
        for i, step in enumerate(assessment["next_steps"])
    )
    rows = "".join(
        f"<tr><td>{_e(a['name'])}</td><td class='num'>"
        + (
            _field(f"attributes.{i}.input_distinct", count(a["input_distinct"]))
            if a.get("input_distinct") is not None
            else "<span class='muted'>not held here</span>"
        )
        + "</td><td class='num'>"
        + _field(f"attributes.{i}.release_distinct", count(a["release_distinct"]))
        + "</td></tr>"
        for i, a in enumerate(report["attributes"])
        if "release_distinct" in a
    )
    release = report.get("release") or {}
    digest = (
        _field("release.sha256", release["sha256"])
        if release.get("sha256")
        else "<span class='muted'>not recorded (the release was not written by this command)</span>"
    )
    command = report["job"].get("command_line") or report["job"]["command"]
    pairs = [
        ("release", f"<code>{_e(release.get('path') or 'n/a')}</code>"),
        ("release SHA-256", f"<code>{digest}</code>"),
        ("exact command", f"<code>{_e(command)}</code>"),
    ]
    return (
        f"<h2>What to do next</h2><ol>{steps}</ol>"
        "<table><tr><th>attribute</th><th>distinct values in the input</th>"
        f"<th>distinct values in the release</th></tr>{rows}</table>"
        f"<table>{_rows(pairs)}</table>"
    )


def _bar(share: float | None, width: int = 160) -> str:
    if share is None:
        return ""
    filled = round(width * share)
    return (
        f"<svg width='{width}' height='12' role='img' aria-label='{percent(share)}'>"
        f"<rect width='{width}' height='12' fill='#eaeef2'/>"
        f"<rect width='{filled}' height='12' fill='#0969da'/></svg>"
    )


def _attributes(report: dict[str, Any]) -> str:
    suppressing = any(a["suppressed_share"] is not None for a in report["attributes"])
    rows = []
    for i, a in enumerate(report["attributes"]):
        kept = a["kept_values"]
        shown = ", ".join(kept[:12]) + (f" … and {len(kept) - 12} more" if len(kept) > 12 else "")
        ncp = (
            _field(f"attributes.{i}.ncp", percent(a["ncp"]))
            if a["ncp"] is not None
            else "<span class='muted'>no taxonomy</span>"
        )
        suppressed = ""
        if suppressing and a["suppressed_share"] is not None:
            suppressed = (
                "<td class='num'>"
                + _field(f"attributes.{i}.suppressed_share", percent(a["suppressed_share"]))
                + "</td>"
            )
        rows.append(
            f"<tr><td>{_e(a['name'])}</td><td>{_e(shown)}</td>"
            f"<td class='num'>{len(kept)}</td>{suppressed}<td class='num'>{ncp}</td>"
            f"<td>{_bar(a['ncp'])}</td></tr>"
        )
    overall = report["information_loss"]["overall_ncp"]
    total = (
        _field("information_loss.overall_ncp", percent(overall))
        if overall is not None
        else "not available (no taxonomy given)"
    )
    kept_header = "released values" if suppressing else "released values (the cut)"
    suppressed_header = "<th>suppressed</th>" if suppressing else ""
    return (
        "<h2>What the release keeps, and what it costs</h2>"
        "<p class='muted'>NCP: normalized certainty penalty, 0 % = values kept exactly, "
        "100 % = fully generalized or suppressed.</p>"
        f"<table><tr><th>attribute</th><th>{kept_header}</th><th>distinct</th>"
        f"{suppressed_header}<th>NCP</th><th></th></tr>{''.join(rows)}</table>"
        f"<p>Overall information loss (mean NCP): <b>{total}</b></p>"
    )


def _bucket_label(bucket: dict[str, Any]) -> str:
    """'1', '3-4' or '1000+' for a class-size bucket."""
    lo, hi = bucket["min_size"], bucket["max_size"]
    if hi is None:
        return f"{lo}+"
    return str(lo) if hi == lo else f"{lo}-{hi}"


def _distribution_svg(buckets: list[dict[str, Any]]) -> str:
    """Records per class-size bucket as an inline SVG bar chart."""
    width, height, left, bottom = 640, 220, 60, 40
    most = max(1, max(b["records"] for b in buckets))
    step = (width - left - 10) / len(buckets)
    parts = [
        f"<svg width='{width}' height='{height}' role='img' "
        "aria-label='records per equivalence-class size'>",
        f"<line x1='{left}' y1='{height - bottom}' x2='{width - 10}' "
        f"y2='{height - bottom}' stroke='#57606a'/>",
    ]
    for i, b in enumerate(buckets):
        h = (height - bottom - 20) * b["records"] / most
        x = left + i * step + 4
        label = _bucket_label(b)
        parts.append(
            f"<rect x='{x:.1f}' y='{height - bottom - h:.1f}' width='{step - 8:.1f}' "
            f"height='{h:.1f}' fill='#0969da'/>"
        )
        parts.append(
            f"<text x='{x + (step - 8) / 2:.1f}' y='{height - bottom + 16}' "
            f"font-size='11' text-anchor='middle'>{_e(label)}</text>"
        )
        parts.append(
            f"<text x='{x + (step - 8) / 2:.1f}' y='{height - bottom - h - 4:.1f}' "
            f"font-size='10' text-anchor='middle'>{_e(count(b['records']))}</text>"
        )
    parts.append(
        f"<text x='{left}' y='{height - 4}' font-size='11'>class size (records "
        "sharing all QID values)</text></svg>"
    )
    return "".join(parts)


def _classes(report: dict[str, Any]) -> str:
    ec = report["equivalence_classes"]
    pairs = [
        ("equivalence classes", _field("equivalence_classes.count", count(ec["count"]))),
        ("smallest class", _field("equivalence_classes.smallest", count(ec["smallest"]))),
        ("largest class", _field("equivalence_classes.largest", count(ec["largest"]))),
        (
            "average class size",
            _field("equivalence_classes.average_size", f"{ec['average_size']:,.2f}"),
        ),
    ]
    base = "equivalence_classes.distribution"
    rows = "".join(
        f"<tr><td>{_e(_bucket_label(b))}</td>"
        f"<td class='num'>{_field(f'{base}.{i}.classes', count(b['classes']))}</td>"
        f"<td class='num'>{_field(f'{base}.{i}.records', count(b['records']))}</td></tr>"
        for i, b in enumerate(ec["distribution"])
    )
    return (
        "<h2>Equivalence classes (all QIDs)</h2>"
        f"<table>{_rows(pairs)}</table>{_distribution_svg(ec['distribution'])}"
        f"<table><tr><th>class size</th><th>classes</th><th>records</th></tr>{rows}</table>"
    )


def _risk(report: dict[str, Any]) -> str:
    pr = report["risk"]["prosecutor"]
    mk = report["risk"]["marketer"]
    pairs = [
        ("prosecutor risk, highest", _field("risk.prosecutor.highest", percent(pr["highest"]))),
        ("prosecutor risk, average", _field("risk.prosecutor.average", percent(pr["average"]))),
        (
            f"records at risk (record risk above {percent(pr['threshold'])})",
            _field("risk.prosecutor.records_at_risk", count(pr["records_at_risk"]))
            + " ("
            + _field("risk.prosecutor.records_at_risk_share", percent(pr["records_at_risk_share"]))
            + ")",
        ),
        (
            "marketer risk (release as population)",
            _field("risk.marketer.expected_share", percent(mk["expected_share"])),
        ),
        (
            "journalist risk",
            "<span class='muted'>not defined: "
            + _e(report["risk"]["journalist"]["reason"])
            + "</span>",
        ),
    ]
    return (
        "<h2>Re-identification risk</h2><p class='muted'>ARX's attacker models over the "
        "equivalence classes of all QIDs: a record in a class of f records has prosecutor "
        "risk 1/f.</p>"
        f"<table>{_rows(pairs)}</table>"
    )


def _confidence_row(i: int, m: dict[str, Any]) -> str:
    base = f"max_confidence.{i}"
    at_l = (
        _field(f"{base}.confidence_at_L", percent(m["confidence_at_L"]))
        if m["confidence_at_L"] is not None
        else "<span class='muted'>not checked</span>"
    )
    return (
        f"<tr><td>{_e(m['column'])} = {_e(m['value'])}</td><td class='num'>{at_l}</td>"
        f"<td class='num'>{_field(f'{base}.confidence', percent(m['confidence']))}</td>"
        f"<td class='num'>{_field(f'{base}.class_size', count(m['class_size']))}</td></tr>"
    )


def _confidence(report: dict[str, Any]) -> str:
    if not report["max_confidence"]:
        return "<h2>Sensitive values</h2><p class='muted'>No sensitive value was named.</p>"
    rows = "".join(_confidence_row(i, m) for i, m in enumerate(report["max_confidence"]))
    return (
        "<h2>Sensitive values</h2><p class='muted'>Highest share of the value in any group: "
        "what an attacker who places a person in that group can infer, knowing at most L QIDs "
        "(the figure C bounds) or all of them.</p><table><tr><th>sensitive value</th>"
        "<th>max confidence, L QIDs known</th><th>max confidence, all QIDs known</th>"
        f"<th>in a class of</th></tr>{rows}</table>"
    )


def _utility(report: dict[str, Any]) -> str:
    u = report["utility"]
    pairs = [
        (
            "discernibility ratio",
            _field("utility.discernibility_ratio", percent(u["discernibility_ratio"])),
        )
    ]
    if u["classification_metric"] is not None:
        pairs.append(
            (
                f"classification metric (class '{u['class_column']}'): records not of "
                "their class's majority label",
                _field("utility.classification_metric", percent(u["classification_metric"])),
            )
        )
    return f"<h2>Utility</h2><table>{_rows(pairs)}</table>"


def render_html(report: dict[str, Any]) -> str:
    """The whole page as one string (UTF-8, no external resource)."""
    title = f"fedanon release report: {report['job']['method']}"
    body = "".join(
        [
            f"<h1>{_e(title)}</h1><p class='muted'>report schema {_e(report['schema'])}</p>",
            _verdict(report),
            _risk(report),
            _confidence(report),
            _attributes(report),
            _classes(report),
            _utility(report),
            _job(report),
            _next(report),
        ]
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>\n"
    )
