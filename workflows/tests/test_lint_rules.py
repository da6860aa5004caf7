"""The linter's building blocks: variable tags and scopes, depends expressions, cron schedules, durations,
names and label selectors."""

from __future__ import annotations

import pytest

from workflows.lint.cron import schedule_problem, timezone_problem
from workflows.lint.dag import Lineage, find_cycle, is_valid_depends, task_dependencies
from workflows.lint.durations import is_duration, is_seconds_or_duration
from workflows.lint.names import check_named_list, param_name_problems, workflow_field_name_problems
from workflows.lint.selectors import label_selector_problems
from workflows.lint.variables import Globals, Scope, is_resolvable, iter_tags, unresolved_tags


class TestTags:
    def test_tags_are_what_lies_between_double_braces(self):
        assert list(iter_tags("a {{x}} b {{ y.z }} c")) == ["x", " y.z "]

    def test_a_tag_ends_at_the_first_closing_braces(self):
        assert list(iter_tags("{{a {{b}} c}}")) == ["a {{b"]

    def test_an_unclosed_tag_ends_the_search(self):
        assert list(iter_tags("{{a}} {{b")) == ["a"]

    def test_map_keys_are_searched_too(self):
        assert unresolved_tags({"{{inputs.parameters.k}}": "v"}, Scope(), Globals()) == [
            "inputs.parameters.k"
        ]


class TestResolution:
    @pytest.mark.parametrize(
        "tag",
        ["item", "retries", "=inputs.parameters.x + 1", "foo.bar", "lastRetry.status", "node.name", "custom"],
    )
    def test_tags_outside_argos_roots_are_not_checked(self, tag):
        assert is_resolvable(tag, Scope(), Globals())

    @pytest.mark.parametrize(
        "tag",
        [
            "outputs.result",
            "workflow.creationTimestamp.RFC3339",
            "workflow.scheduledTime",
            "workflow.duration",
            "steps.name",
            "tasks.name",
        ],
    )
    def test_run_time_variables_are_always_accepted(self, tag):
        assert is_resolvable(tag, Scope(), Globals())

    def test_a_checked_tag_must_be_in_scope_or_global(self):
        scope, globals_ = Scope({"inputs.parameters.a"}), Globals({"workflow.name"})
        assert is_resolvable(" inputs.parameters.a ", scope, globals_)
        assert is_resolvable("workflow.name", scope, globals_)
        assert not is_resolvable("inputs.parameters.b", scope, globals_)

    def test_with_param_accepts_any_item_key(self):
        assert is_resolvable("item.anything", Scope(any_item=True), Globals())
        assert not is_resolvable("item.anything", Scope(), Globals())

    def test_workflow_failures_only_where_the_exit_handler_runs(self):
        assert not is_resolvable("workflow.failures", Scope(), Globals())
        assert is_resolvable("workflow.failures", Scope(), Globals(failures=True))

    def test_a_workflow_template_accepts_any_workflow_parameter(self):
        assert is_resolvable("workflow.parameters.x", Scope(), Globals(any_workflow_parameter=True))

    def test_nodes_calling_unseen_templates_accept_any_output(self):
        scope = Scope(open_prefixes={"steps.remote."})
        assert is_resolvable("steps.remote.outputs.parameters.p", scope, Globals())
        assert not is_resolvable("steps.other.outputs.result", scope, Globals())


class TestDepends:
    @pytest.mark.parametrize(
        "expression",
        ["A", "A.Succeeded", "A && B", "(A.Failed || B.Errored) && !C.Skipped", "A.AnySucceeded||B"],
    )
    def test_well_formed_expressions(self, expression):
        assert is_valid_depends(expression)

    @pytest.mark.parametrize("expression", ["A &&", "(A", "A B", "&& A", "A == B", "A)", "!"])
    def test_malformed_expressions(self, expression):
        assert not is_valid_depends(expression)

    def test_dependencies_and_item_based_results(self):
        assert task_dependencies({"depends": "(A.Succeeded || B.AnySucceeded) && C"}) == {
            "A": False,
            "B": True,
            "C": False,
        }
        assert task_dependencies({"dependencies": ["A", "B"]}) == {"A": False, "B": False}

    def test_cycles_are_found_and_spelled_out(self):
        assert find_cycle({"A": ["B"], "B": ["C"], "C": ["A"]}) == ["A", "B", "C", "A"]
        assert find_cycle({"A": [], "B": ["A"]}) is None

    def test_a_cycle_is_found_in_a_chain_longer_than_the_recursion_limit(self):
        chain = {f"t{i}": [f"t{i + 1}"] for i in range(5000)}
        assert find_cycle(chain) is None
        chain["t5000"] = ["t0"]
        cycle = find_cycle(chain)
        assert cycle is not None
        assert cycle[0] == cycle[-1]
        assert len(cycle) == 5002

    def test_a_cycle_reached_through_a_branch_is_spelled_from_where_it_starts(self):
        assert find_cycle({"A": ["B", "C"], "B": [], "C": ["D"], "D": ["C"]}) == ["C", "D", "C"]

    def test_a_lineage_holds_every_ancestor_and_nothing_else(self):
        graph = {"A": [], "B": ["A"], "C": ["B"], "D": ["A"], "E": ["C", "D"]}
        lineage = Lineage(graph, "C")
        assert [task for task in "ABCDE" if task in lineage] == ["A", "B"]
        assert all(task in Lineage(graph, "E") for task in "ABCD")
        assert "E" not in Lineage(graph, "E")

    def test_a_lineage_answers_again_after_its_walk_is_done(self):
        lineage = Lineage({"A": [], "B": ["A"], "C": ["B"]}, "C")
        assert "X" not in lineage  # walks everything
        assert [task for task in "ABC" if task in lineage] == ["A", "B"]

    def test_a_lineage_survives_a_cycle(self):
        lineage = Lineage({"A": ["B"], "B": ["A"]}, "A")
        assert [task for task in "AB" if task in lineage] == ["B"]


class TestCronSchedules:
    @pytest.mark.parametrize(
        "schedule",
        [
            "* * * * *",
            "*/5 0-6 1,15 jan-mar MON-FRI",
            "0 9 ? * sun",
            "30 3 * * 0",
            "@daily",
            "@every 1h30m",
            "CRON_TZ=UTC 0 0 * * *",
        ],
    )
    def test_valid_schedules(self, schedule):
        assert schedule_problem(schedule) is None

    @pytest.mark.parametrize(
        ("schedule", "problem"),
        [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
            ("*/0 * * * *", "step of range should be a positive number: */0"),
            ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
            ("@fortnightly", "unrecognized descriptor: @fortnightly"),
            ("", "empty spec string"),
        ],
    )
    def test_invalid_schedules_say_why(self, schedule, problem):
        assert schedule_problem(schedule) == problem

    def test_utc_is_always_a_known_time_zone(self):
        assert timezone_problem("UTC") is None


class TestDurations:
    @pytest.mark.parametrize("value", ["1h", "1h30m", "1.5s", "300ms", "2h45m10s", "0", "-1m"])
    def test_go_durations(self, value):
        assert is_duration(value)

    @pytest.mark.parametrize("value", ["", "1", "1d", "h", "1 h", "1.s.2"])
    def test_not_go_durations(self, value):
        assert not is_duration(value)

    def test_argo_also_accepts_whole_seconds(self):
        assert is_seconds_or_duration("30")


class TestNames:
    def test_template_names_are_alphanumeric_with_dashes(self):
        assert workflow_field_name_problems("Build-2") == []
        assert workflow_field_name_problems("-build") != []
        assert workflow_field_name_problems("a" * 129) == ["must be no more than 128 characters"]

    def test_parameter_names_may_also_use_underscores(self):
        assert param_name_problems("my_param-1") == []
        assert param_name_problems("my.param") != []

    def test_named_lists_report_missing_invalid_and_repeated_names(self):
        items = [{"name": ""}, {"name": "a"}, {"name": "a"}, {"name": "b c"}, "not an object"]
        assert [error.path for error in check_named_list(items, "spec.templates", parameters=False)] == [
            "spec.templates[0].name",
            "spec.templates[2].name",
            "spec.templates[3].name",
        ]


class TestLabelSelectors:
    def test_a_valid_selector_has_no_problem(self):
        selector = {
            "matchLabels": {"app.kubernetes.io/name": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
        }
        assert label_selector_problems(selector) == []

    def test_in_needs_values_and_exists_needs_none(self):
        selector = {
            "matchExpressions": [
                {"key": "tier", "operator": "In"},
                {"key": "tier", "operator": "Exists", "values": ["a"]},
            ]
        }
        assert label_selector_problems(selector) == [
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
            "values: Invalid value: ['a']: values set must be empty for exists and does not exist",
        ]

    def test_label_keys_must_be_qualified_names(self):
        assert label_selector_problems({"matchLabels": {"-bad": "x"}})[0].startswith(
            'key: Invalid value: "-bad"'
        )
