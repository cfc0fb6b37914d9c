# ruff: noqa: E501  (HTML and SVG lines read better unwrapped)
"""The Jinja2 template of the HTML report (kept apart from the code that fills it)."""

TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rook run {{ run.id }} — {{ verdict }}</title>
<style>
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; --soft:#f6f8fa; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       color:var(--fg); background:var(--bg); }
main { max-width: 1200px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; border-bottom: 1px solid var(--line);
     padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
.muted { color: var(--muted); }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; color:#fff;
         font-size:12px; font-weight:600; white-space:nowrap; }
.cards { display:flex; flex-wrap:wrap; gap:12px; margin:16px 0; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px 14px; min-width:150px;
        background:var(--soft); }
.card .big { font-size:24px; font-weight:600; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left;
         vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px;
      padding: 8px 10px; white-space: pre-wrap; word-break: break-word; margin: 4px 0 10px;
      max-height: 420px; overflow: auto; font-size: 12.5px; }
details.run { border: 1px solid var(--line); border-radius: 8px; margin: 8px 0;
              padding: 0 12px; }
details.run > summary { cursor: pointer; padding: 8px 0; font-weight: 600; }
details.run[open] > summary { border-bottom: 1px solid var(--line); margin-bottom: 8px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
svg text { font: 12px -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; fill: #1f2328; }
.facts span { margin-right: 16px; }
</style>
</head>
<body>
<main>
<h1>Rook run <code>{{ run.id }}</code>
  <span class="badge" style="background:{{ colours[verdict] }}">{{ verdict }}</span></h1>
<div class="facts muted">
  <span>agent <code>{{ run.project }}/{{ run.agent }}</code></span>
  <span>profile <code>{{ run.profile.id }}</code></span>
  {% if run.get("judge_profile") %}<span>judge profile <code>{{ run.judge_profile.id }}</code></span>{% endif %}
  <span>phases {{ run.phases | join(", ") }}</span>
  {% if continuity %}<span>Ruhroh continuity <code>{{ continuity | join(", ") }}</code></span>{% endif %}
  {% if started %}<span>started {{ started }}</span>{% endif %}
</div>

<div class="cards">
  <div class="card"><div class="muted">pass rate (decided runs)</div>
    <div class="big">{{ percent(summary.pass_rate) }}</div>
    <div class="muted">{{ summary.passed }} of {{ summary.decided }} decided</div></div>
  <div class="card"><div class="muted">verification coverage</div>
    <div class="big">{{ percent(summary.coverage) }}</div>
    <div class="muted">{{ summary.decided }} of {{ summary.total }} planned run{% if summary.total != 1 %}s{% endif %} decided</div></div>
  <div class="card"><div class="muted">scenarios</div>
    <div class="big">{{ per | length }}</div>
    <div class="muted">{{ repeats.pass_all }} passed every run{% if repeats.flaky %}, {{ repeats.flaky }} flaky{% endif %}</div></div>
  <div class="card"><div class="muted">runs by status</div>
    {% for s in statuses if summary.get(s) %}
    <div><span class="badge" style="background:{{ colours[s] }}">{{ s }}</span> {{ summary[s] }}</div>
    {% endfor %}</div>
  {% if gate %}
  <div class="card"><div class="muted">gate --min-pass-rate {{ gate.min_pass_rate }}</div>
    <div class="big">{{ "missed" if gate.missed else "met" }}</div>
    <div class="muted">{% for m in gate.missed %}{{ m.id }} {{ percent(m.pass_rate) }}{% if not loop.last %}, {% endif %}{% endfor %}</div>
    {% if gate.get("ungated") %}
    <div class="muted">ungated (no decided run): {{ gate.ungated | join(", ") }}</div>
    {% endif %}</div>
  {% endif %}
</div>

<h2>Pass rate per scenario</h2>
<p class="muted">Bar: passes over decided runs; whisker: 95 % Wilson interval; squares: each run, in order.</p>
<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="pass rate per scenario"
     width="{{ chart.width }}" height="{{ chart.height }}" viewBox="0 0 {{ chart.width }} {{ chart.height }}">
  {% for t in chart.ticks %}
  <line x1="{{ t.x }}" y1="14" x2="{{ t.x }}" y2="{{ chart.height - 4 }}" stroke="#d1d9e0"/>
  <text x="{{ t.x }}" y="11" text-anchor="middle">{{ t.label }}</text>
  {% endfor %}
  {% for r in chart.rows %}
  <g><title>{{ r.title }}</title>
    <text x="{{ chart.label_w - 8 }}" y="{{ r.y + 13 }}" text-anchor="end">{{ r.label }}</text>
    <rect x="{{ chart.label_w }}" y="{{ r.y + 3 }}" width="{{ chart.bar_w }}" height="14" fill="#f6f8fa" stroke="#d1d9e0"/>
    <rect x="{{ chart.label_w }}" y="{{ r.y + 3 }}" width="{{ r.width }}" height="14" fill="{{ r.colour }}"/>
    {% if r.whisker %}
    <line x1="{{ r.whisker.x1 }}" y1="{{ r.y + 10 }}" x2="{{ r.whisker.x2 }}" y2="{{ r.y + 10 }}" stroke="#1f2328" stroke-width="1.5"/>
    <line x1="{{ r.whisker.x1 }}" y1="{{ r.y + 5 }}" x2="{{ r.whisker.x1 }}" y2="{{ r.y + 15 }}" stroke="#1f2328" stroke-width="1.5"/>
    <line x1="{{ r.whisker.x2 }}" y1="{{ r.y + 5 }}" x2="{{ r.whisker.x2 }}" y2="{{ r.y + 15 }}" stroke="#1f2328" stroke-width="1.5"/>
    {% endif %}
    <text x="{{ chart.label_w + chart.bar_w + 8 }}" y="{{ r.y + 13 }}">{{ r.count }}</text>
    {% for m in r.marks %}
    <rect x="{{ m.x }}" y="{{ r.y + 5 }}" width="{{ chart.mark }}" height="{{ chart.mark }}" fill="{{ m.colour }}"><title>{{ m.title }}</title></rect>
    {% endfor %}
  </g>
  {% endfor %}
</svg>
{% if chart.hidden %}<p class="muted">{{ chart.hidden }} more {{ "scenario is" if chart.hidden == 1 else "scenarios are" }} in the table below.</p>{% endif %}

<h2>Scenarios</h2>
<table>
  <tr><th>scenario</th><th>result</th><th class="num">passes</th><th class="num">pass rate (95 % CI)</th><th>pass^N</th><th>pass@N</th><th>class / category</th><th>name</th></tr>
  {% for p in per %}
  <tr><td><a href="#s-{{ p.id }}"><code>{{ p.id }}</code></a></td>
    <td><span class="badge" style="background:{{ colours[p.outcome] }}">{{ p.outcome }}</span>{% if p.also_flaky %} <span class="badge" style="background:{{ colours.flaky }}">flaky</span>{% endif %}</td>
    <td class="num">{{ p.passed }}/{{ p.runs }}</td>
    <td class="num">{{ p.rate_text }}</td>
    <td>{{ "yes" if p.pass_all else "no" }}</td>
    <td>{{ "yes" if p.pass_any else "no" }}</td>
    <td>{{ p.get("class", "") }}{% if p.get("category") %} / {{ p.category }}{% endif %}</td>
    <td>{{ p.name or "" }}</td></tr>
  {% endfor %}
</table>

<h2>Runs</h2>
{% for e in runs(report.scenarios) %}
<details class="run" id="{% if e.repeat_index == 1 %}s-{{ e.id }}{% else %}s-{{ e.id }}.{{ e.repeat_index }}{% endif %}" {% if e.status != "passed" %}open{% endif %}>
  <summary><span class="badge" style="background:{{ colours.get(e.status, '#999') }}">{{ e.status }}</span>
    <code>{{ e.id }}</code>{{ repeat_label(e) }}
    <span class="muted">— {{ e.reason }}{% if e.warnings %}; {{ warning_note(e) }}{% endif %}</span></summary>
  <div class="muted">{{ e.name }}{% if e.seconds %} · {{ "%.2f" | format(e.seconds) }} s{% endif %}{% if e.tags %} · tags {{ e.tags | join(", ") }}{% endif %}</div>

  {% if e.criteria %}
  <h3>Criteria</h3>
  <table>
    <tr><th>status</th><th>criterion</th><th>reason</th></tr>
    {% for c in e.criteria %}
    <tr><td><span class="badge" style="background:{{ colours.get(c.status, '#999') }}">{{ c.status }}</span></td>
      <td><code>{{ c.type }}</code>{% if c.id is defined and c.id is not none %} [{{ c.id }}]{% endif %}{% if c.turn %} turn {{ c.turn }}{% endif %}</td>
      <td>{{ c.reason }}
        {% if c.evidence is defined and c.evidence %}
        <details><summary class="muted">evidence</summary><pre>{{ cut(c.evidence) }}</pre></details>
        {% endif %}</td></tr>
    {% endfor %}
  </table>
  {% endif %}

  {% for t in e.turns %}
  <h3>Turn {{ t.turn }}{% if t.seconds %} <span class="muted">({{ "%.2f" | format(t.seconds) }} s)</span>{% endif %}</h3>
  <div class="muted">input</div><pre>{{ cut(t.input or "") }}</pre>
  <div class="muted">output</div><pre>{{ cut(t.output if t.output is not none else "(none)") }}</pre>
  <div class="muted">calls: {% if t.calls is none %}not observed{% elif not t.calls %}none observed{% endif %}</div>
  {% if t.calls %}<pre>{{ cut(t.calls) }}</pre>{% endif %}
  <div class="muted">usage: {% if t.usage is none %}not observed{% else %}{{ t.usage }}{% endif %}</div>
  {% if t.evidence %}<div class="muted">other evidence</div><pre>{{ cut(t.evidence) }}</pre>{% endif %}
  {% endfor %}
  {% if e.collected %}<h3>Collected</h3><pre>{{ cut(e.collected) }}</pre>{% endif %}

  {% if e.hooks %}
  <h3>Hooks</h3>
  <table>
    <tr><th>phase</th><th>status</th><th class="num">exit</th><th class="num">seconds</th><th>diagnosis</th></tr>
    {% for h in e.hooks %}
    <tr><td>{{ h.phase }}{% if h.turn %} {{ h.turn }}{% endif %}</td>
      <td><span class="badge" style="background:{{ '#1a7f37' if h.status == 'ok' else '#cf222e' }}">{{ h.status }}</span></td>
      <td class="num">{{ h.exit_code if h.exit_code is not none else "" }}</td>
      <td class="num">{{ "%.3f" | format(h.seconds or 0) }}</td>
      <td>{{ h.diagnosis or "" }}{% if h.continuity %} <span class="muted">(Ruhroh continuity: {{ h.continuity }})</span>{% endif %}</td></tr>
    {% endfor %}
  </table>
  {% endif %}
  {% for w in warning_lines(e) %}<div class="muted">{{ w }}</div>{% endfor %}
</details>
{% endfor %}

<p class="muted">Rook {{ version }} · run directory <code>{{ run.dir }}</code></p>
</main>
</body>
</html>
"""
