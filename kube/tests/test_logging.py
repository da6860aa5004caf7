"""Log lines written inside a reconcile or watch handler name the controller and the resource key."""

from __future__ import annotations

import io
import json
import logging
import logging.config
import threading

import pytest
from django.conf import settings

from kube.logging import ContextFilter, current, log_context, resource_key, with_log_context


def handler_from_settings(formatter: str, *, text: bool) -> tuple[logging.Handler, io.StringIO]:
    """A handler built from settings.LOGGING's formatter and our filter, writing to a buffer (without
    dictConfig, which would tear down pytest's own handlers)."""
    configurator = logging.config.DictConfigurator(settings.LOGGING)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(configurator.configure_formatter(dict(settings.LOGGING["formatters"][formatter])))
    filter_config = dict(settings.LOGGING["filters"]["kube_context"], text=text)
    handler.addFilter(configurator.configure_filter(filter_config))
    return handler, stream


@pytest.fixture
def logger():
    logger = logging.getLogger("kube.tests.logging")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    yield logger
    logger.handlers.clear()
    logger.propagate = True


def test_the_console_handler_in_settings_runs_the_context_filter():
    console = settings.LOGGING["handlers"]["console"]
    assert "kube_context" in console["filters"]
    assert settings.LOGGING["filters"]["kube_context"]["()"] == "kube.logging.ContextFilter"


def test_json_lines_inside_a_handler_carry_controller_and_key_fields(logger):
    handler, stream = handler_from_settings("json", text=False)
    logger.addHandler(handler)
    with log_context("tfjob", "team-a/mnist"):
        logger.info("created %d pods", 7)
    line = json.loads(stream.getvalue())
    assert line["message"] == "created 7 pods"
    assert (line["controller"], line["key"]) == ("tfjob", "team-a/mnist")


def test_json_lines_outside_any_handler_have_no_context_fields(logger):
    handler, stream = handler_from_settings("json", text=False)
    logger.addHandler(handler)
    logger.info("starting")
    line = json.loads(stream.getvalue())
    assert "controller" not in line
    assert "key" not in line


def test_text_lines_show_the_context_after_the_message(logger):
    handler, stream = handler_from_settings("text", text=True)
    logger.addHandler(handler)
    with log_context("hpw", "default/sweep"):
        logger.warning("trial %s failed: 100%% of %s", 3, "x")
    assert stream.getvalue().rstrip().endswith("trial 3 failed: 100% of x [controller=hpw key=default/sweep]")


def test_a_nested_context_keeps_the_outer_controller_and_restores_it_after():
    with log_context("tb"):
        with log_context(key="ns/board"):
            assert (current().controller, current().key) == ("tb", "ns/board")
        assert (current().controller, current().key) == ("tb", None)
    assert (current().controller, current().key) == (None, None)


def test_the_context_is_restored_when_the_handler_raises():
    with pytest.raises(RuntimeError), log_context("tfjob", "a/b"):
        raise RuntimeError("boom")
    assert current().key is None


def test_a_wrapped_watch_handler_logs_under_the_objects_key():
    seen: list[tuple[str | None, str | None]] = []

    def handler(event_type, obj):
        seen.append((current().controller, current().key))

    wrapped = with_log_context("pytorchjob", handler)
    wrapped("ADDED", {"metadata": {"namespace": "ml", "name": "bert"}})
    wrapped("ADDED", {"metadata": {"name": "cluster-scoped"}})
    assert seen == [("pytorchjob", "ml/bert"), ("pytorchjob", "cluster-scoped")]
    assert current().key is None


def test_threads_do_not_see_each_others_key():
    barrier = threading.Barrier(2)
    seen: dict[str, str | None] = {}

    def work(key: str) -> None:
        with log_context("tfjob", key):
            barrier.wait(timeout=5)
            seen[key] = current().key

    threads = [threading.Thread(target=work, args=(key,)) for key in ("ns/a", "ns/b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"ns/a": "ns/a", "ns/b": "ns/b"}


def test_a_cluster_scoped_key_is_just_the_name():
    assert resource_key(None, "argoml") == "argoml"
    assert resource_key("ns", "x") == "ns/x"


def test_the_filter_never_drops_a_record():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    assert ContextFilter().filter(record) is True


def test_the_controller_runtime_logs_under_the_names_it_had_before_it_moved_into_kube_controller():
    from kube.controller import leader, runtime
    from kube.controller.mirror import writer
    from kube.controller.queue import core

    names = [module.logger.name for module in (leader, runtime, writer, core)]
    assert names == ["kube.leader", "kube.runtime", "kube.mirror.writer", "kube.queue.core"]
