"""`report.html`: one self-contained page (no script, no CDN, no external file) about a run.

Summary table, the oracle self-check, success by domain and by chain length, calibrated versus
uncalibrated openings, the error taxonomy as inline SVG charts, and every trajectory readable turn
by turn. Every piece of content is escaped: tool outputs and model text are data, not markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from envfarm.clients.scoring import PolicySummary, summarize
from envfarm.clients.trajectory import Trajectory

COLORS = ("#3b6fb6", "#e08a2e", "#4c9a5b", "#b64b6e", "#7a5bb6", "#8a8a8a", "#2e9ca6", "#c2a23a", "#5b5b9a")
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;color:#222;
padding:0 1em}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}.facts td{text-align:left}thead{background:#f4f4f4}
.charts{display:flex;flex-wrap:wrap;gap:1.5em}.chart{border:1px solid #eee;padding:.5em}
details{border:1px solid #ddd;margin:.4em 0;border-radius:4px}
summary{cursor:pointer;padding:.4em .6em;background:#fafafa}
.msg{margin:.4em .8em;padding:.4em .6em;border-radius:6px;white-space:pre-wrap;word-break:break-word}
.user{background:#eef4ff}.assistant{background:#f3f3f3}.tool{background:#f7fbf2;font-family:ui-monospace,monospace;font-size:12px}
.call{font-family:ui-monospace,monospace;font-size:12px;color:#6a3d00}.role{font-weight:600;font-size:11px;text-transform:uppercase;color:#666}
.ok{color:#2b7a3d}.bad{color:#b02a37}.muted{color:#777}.score{margin:.4em .8em;font-size:13px}
"""


def bar_chart(
    title: str, rows: Sequence[tuple[str, float, str]], *, maximum: float | None = None, percent: bool = True
) -> str:
    """A horizontal bar chart as inline SVG: one (label, value, color) per bar."""
    top = maximum if maximum is not None else max((v for _, v, _ in rows), default=1.0) or 1.0
    label_w, bar_w, row_h = 280, 300, 22
    height = row_h * len(rows) + 34
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{label_w + bar_w + 70}" height="{height}" '
            f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
        ),
        f'<text x="0" y="16" font-size="13" font-weight="600">{escape(title)}</text>',
    ]
    for n, (label, value, color) in enumerate(rows):
        y = 28 + n * row_h
        width = 0 if top <= 0 else bar_w * max(value, 0) / top
        shown = f"{100 * value:.0f}%" if percent else f"{value:g}"
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" font-size="12" text-anchor="end">{escape(label)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{width:.1f}" height="{row_h - 6}" fill="{color}"/>')
        parts.append(f'<text x="{label_w + width + 4:.1f}" y="{y + 14}" font-size="12">{shown}</text>')
    if not rows:
        parts.append('<text x="0" y="44" font-size="12" fill="#777">no data</text>')
    parts.append("</svg>")
    return f'<div class="chart">{"".join(parts)}</div>'


def _rate(group: Sequence[Trajectory]) -> float:
    scored = [t for t in group if t.score is not None and not t.score.excluded]
    return sum(bool(t.score and t.score.success) for t in scored) / len(scored) if scored else 0.0


def _color(policies: list[str], policy: str) -> str:
    return COLORS[policies.index(policy) % len(COLORS)] if policy in policies else COLORS[-1]


def _breakdown(trajectories: Sequence[Trajectory], policies: list[str], key: Any, title: str) -> str:
    """Success per (policy, key(trajectory)) over calibrated openings."""
    groups: dict[tuple[str, str], list[Trajectory]] = {}
    for t in trajectories:
        if t.calibrated:
            groups.setdefault((str(key(t)), t.policy), []).append(t)
    rows = [
        (f"{label} · {policy} (n={len(group)})", _rate(group), _color(policies, policy))
        for (label, policy), group in sorted(groups.items())
    ]
    return bar_chart(title, rows, maximum=1.0)


def chain_bucket(trajectory: Trajectory) -> str:
    """Gold calls per task, with long chains together (so buckets sort and stay populated)."""
    n = len(trajectory.task.gold_calls)
    return f"{n} call{'s' if n != 1 else ''}" if n < 6 else "6+ calls"


def summary_table(summaries: Sequence[PolicySummary]) -> str:
    head = (
        "<tr><th>policy</th><th>opening</th><th>episodes</th><th>success</th><th>state match</th>"
        "<th>claims pass</th><th>policy pass</th><th>mean reward</th><th>pass@k</th><th>pass^k</th>"
        "<th>calls/episode</th><th>tasks per solve rate</th></tr>"
    )
    body = []
    for s in summaries:
        at_k = ", ".join(f"@{k} {v:.2f}" for k, v in s.pass_at_k.items())
        hat_k = ", ".join(f"^{k} {v:.2f}" for k, v in s.pass_hat_k.items())
        rates = ", ".join(f"{rate}: {n}" for rate, n in s.solve_rates.items())
        body.append(
            f"<tr><td>{escape(s.policy)}</td><td>{'calibrated' if s.calibrated else 'uncalibrated'}</td>"
            f"<td>{s.episodes}</td><td>{s.success_rate:.1%}</td><td>{s.state_match_rate:.1%}</td>"
            f"<td>{s.claims_pass_rate:.1%}</td><td>{s.policy_pass_rate:.1%}</td><td>{s.mean_reward:.3f}</td>"
            f"<td>{escape(at_k)}</td>"
            f"<td>{escape(hat_k)}</td><td>{s.tool_calls_per_episode:.2f}</td><td>{escape(rates)}</td></tr>"
        )
    return f"<table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def _clip(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[:limit] + f" … ({len(text) - limit} more characters)"


def trajectory_html(t: Trajectory) -> str:
    score = t.score
    verdict = "unscored" if score is None else ("solved" if score.success else f"failed: {score.error or '?'}")
    css = "ok" if score is not None and score.success else "bad"
    opening = "calibrated" if t.calibrated else "uncalibrated"
    head = (
        f"<summary><b>{escape(t.task_id)}</b> · {escape(t.policy)} · {opening} · attempt {t.attempt} · "
        f'<span class="{css}">{escape(verdict)}</span> · {len(t.calls)} calls · stop: {escape(t.stop_reason)}</summary>'
    )
    parts = [head]
    for message in t.messages:
        role = message["role"]
        if role == "system":
            prompt = escape(_clip(str(message.get("content") or "")))
            parts.append(
                f'<details><summary class="muted">system prompt</summary><div class="msg">{prompt}</div></details>'
            )
            continue
        inner = []
        if message.get("content"):
            inner.append(escape(_clip(str(message["content"]))))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            name, arguments = escape(str(function.get("name"))), escape(_clip(str(function.get("arguments")), 600))
            inner.append(f'<div class="call">→ {name}({arguments})</div>')
        parts.append(f'<div class="msg {escape(role)}"><div class="role">{escape(role)}</div>{"".join(inner)}</div>')
    if score is not None:
        claims = "; ".join(
            f"{escape(g.claim)} [{g.score:g}]" + (f" judge error: {escape(g.judge_error)}" if g.judge_error else "")
            for g in score.claims
        )
        problems = escape("; ".join(score.state_problems + score.policy_problems)) or "none"
        checks = "; ".join(
            f"{escape(g.kind)} {escape(g.tool or '')} [{'ok' if g.passed else 'violated'}]"
            + (f" judge error: {escape(g.judge_error)}" if g.judge_error else "")
            for g in score.policy
        )
        parts.append(
            f'<div class="score">reward {score.reward:g} · state match {escape(str(score.state_match))} · '
            f"claims {score.claims_coverage:.2f} ({claims or 'no claims'}) · policy "
            f"{'ok' if score.policy_pass else 'violated'} ({checks or 'no checks'}) · problems: {problems}</div>"
        )
    return f"<details>{''.join(parts)}</details>"


def render_report(
    trajectories: Sequence[Trajectory],
    *,
    title: str = "envfarm run",
    domains: Mapping[str, str] | None = None,
    facts: Mapping[str, Any] | None = None,
    oracle_failures: Sequence[str] = (),
    max_trajectories: int = 300,
) -> str:
    """The whole page. `domains` maps server -> domain (default: the server name)."""
    domains = domains or {}
    summaries = summarize(trajectories)
    policies = sorted({t.policy for t in trajectories})

    def domain_of(t: Trajectory) -> str:
        found = {domains.get(s, s) for s in t.task.servers}
        return found.pop() if len(found) == 1 else "cross-domain"

    calibration = [
        (f"{s.policy} · {'calibrated' if s.calibrated else 'uncalibrated'}", s.success_rate, _color(policies, s.policy))
        for s in sorted(summaries, key=lambda s: (s.policy, not s.calibrated))
    ]
    errors: list[tuple[str, float, str]] = []
    for s in summaries:
        for category, count in sorted(s.errors.items()):
            label = f"{category} · {s.policy}{'' if s.calibrated else ' (uncal.)'}"
            errors.append((label, float(count), _color(policies, s.policy)))
    checks = [
        (
            f"{kind} · {s.policy}{'' if s.calibrated else ' (uncal.)'} (n={tally['checks']})",
            tally["passed"] / tally["checks"],
            _color(policies, s.policy),
        )
        for s in sorted(summaries, key=lambda s: (s.policy, not s.calibrated))
        for kind, tally in s.policy_checks.items()
        if tally["checks"]
    ]
    server_errors = sum(s.errors.get("server_error", 0) for s in summaries)
    policy_errors = sum(s.errors.get("policy_error", 0) for s in summaries)
    charts = "".join(
        [
            bar_chart("Success: calibrated vs uncalibrated openings", calibration, maximum=1.0),
            _breakdown(trajectories, policies, domain_of, "Success by domain (calibrated)"),
            _breakdown(
                trajectories,
                policies,
                chain_bucket,
                "Success by chain length (calibrated)",
            ),
            bar_chart("Policy checks passed, by kind", checks, maximum=1.0),
            bar_chart("Error taxonomy (failed episodes)", errors, percent=False),
        ]
    )
    fact_rows = "".join(
        f"<tr><td>{escape(str(k))}</td><td>{escape(json.dumps(v) if not isinstance(v, str) else v)}</td></tr>"
        for k, v in (facts or {}).items()
    )
    oracle = (
        '<p class="ok">The oracle scored 1.0 on every task: the pipeline is consistent.</p>'
        if not oracle_failures
        else f'<p class="bad">The oracle failed {len(oracle_failures)} task(s) (each one a pipeline bug):</p><ul>'
        + "".join(f"<li>{escape(f)}</li>" for f in oracle_failures)
        + "</ul>"
    )
    shown = list(trajectories)[:max_trajectories]
    more = len(trajectories) - len(shown)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>"
        f'<table class="facts"><tbody>{fact_rows}</tbody></table>'
        f"<h2>Summary</h2>{summary_table(summaries)}"
        f'<p class="muted">Success = state match and claims pass (coverage &ge; 0.75) and policy checks. '
        f"Rates exclude episodes with a server error ({server_errors} here) or whose policy endpoint failed "
        f"({policy_errors} here).</p>"
        f"<h2>Oracle self-check</h2>{oracle}"
        f'<h2>Charts</h2><div class="charts">{charts}</div>'
        f"<h2>Trajectories</h2>"
        + "".join(trajectory_html(t) for t in shown)
        + (f'<p class="muted">{more} more trajectories are in the JSONL file.</p>' if more > 0 else "")
        + "</body></html>"
    )
