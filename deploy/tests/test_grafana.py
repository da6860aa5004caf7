"""The sample Grafana dashboard only charts metrics the code exports, under the names Prometheus sees."""

from __future__ import annotations

import ast
import json
import re

from .apicalls import production_modules, project_packages
from .manifests import DEPLOY

DASHBOARD = DEPLOY / "grafana" / "argoml-dashboard.json"
PROMQL_WORDS = {
    "by",
    "without",
    "le",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
}


def exported_series() -> set[str]:
    """Every series name our prometheus_client metrics expose (counters get _total, histograms three)."""
    suffixes = {
        "Counter": ["_total"],
        "Gauge": [""],
        "Histogram": ["_bucket", "_sum", "_count"],
        "Summary": ["_sum", "_count"],
    }
    names = {"up"}  # Prometheus' own, per scraped target
    for _, path in production_modules(project_packages()):
        for node in ast.walk(ast.parse(path.read_text())):
            kind = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else ""
            if kind in suffixes and node.args and isinstance(node.args[0], ast.Constant):
                base = str(node.args[0].value).removesuffix("_total")
                names |= {base + suffix for suffix in suffixes[kind]}
    return names


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects: identifiers that are not functions, keywords, label
    names (inside {} or a by/without clause) or ranges."""
    stripped = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\b(by|without)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", stripped):
        is_function = stripped[match.end() :].lstrip().startswith("(")
        if not is_function and match.group() not in PROMQL_WORDS:
            names.add(match.group())
    return names


def expressions(dashboard: dict) -> list[str]:
    panels = [panel for panel in dashboard["panels"] if panel["type"] != "row"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def test_the_dashboard_is_valid_json_with_a_datasource_variable():
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert {"datasource", "namespace"} <= variables
    assert len(expressions(dashboard)) >= 10


def test_every_metric_the_dashboard_charts_is_exported_by_the_code():
    exported = exported_series()
    assert {"controller_runtime_reconcile_total", "workqueue_depth", "argoml_tasks_total"} <= exported
    charted = {name for expr in expressions(json.loads(DASHBOARD.read_text())) for name in metric_names(expr)}
    assert charted, "no metric found in the dashboard"
    assert not charted - exported, f"charted but exported by nothing: {sorted(charted - exported)}"


def test_the_promql_reader_finds_series_and_skips_functions_and_labels():
    expr = 'histogram_quantile(0.99, sum by (le, controller) (rate(x_seconds_bucket{namespace="a"}[5m])))'
    assert metric_names(expr) == {"x_seconds_bucket"}
