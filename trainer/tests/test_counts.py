"""Every count a TrainJob or its runtime gives is bounded (`limits`) where it is parsed and where the two are
resolved, before anything is planned: a 100,000-node TrainJob is refused by field, and never costs
O(nodes) anywhere. Each bound is read when checked, so a deployment's setting reaches every door."""

from __future__ import annotations

import time

import pytest

import limits
from fields import SpecError
from trainer import constants as c
from trainer.operator import plan, readers, resolution, spec
from trainer.tests import factories as f
from trainer.tests.test_spec import problems

NODES_PAST = "must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000"
PROCESSES_PAST = "must be at most 1024 processes (MAX_PROCESSES_PER_NODE), not 100000"


def resolve(job_body, runtime_body):
    return resolution.resolve(spec.parse_train_job(job_body), spec.parse_runtime(runtime_body))


class TestTheTrainJobsCounts:
    @pytest.mark.parametrize(
        ("trainer", "path", "message"),
        [
            ({"numNodes": 100_000}, "spec.trainer.numNodes", NODES_PAST),
            ({"numProcPerNode": 100_000}, "spec.trainer.numProcPerNode", PROCESSES_PAST),
        ],
    )
    def test_a_count_past_its_bound_is_named_with_the_bound_and_its_setting(self, trainer, path, message):
        with pytest.raises(SpecError) as error:
            spec.parse_train_job(f.train_job(trainer=trainer))
        assert problems(error) == {path: message}
        assert all(isinstance(problem, readers.TooMany) for problem in error.value.errors)

    def test_the_bound_itself_is_allowed(self):
        job = spec.parse_train_job(f.train_job(trainer={"numNodes": 1000, "numProcPerNode": 1024}))
        assert job.trainer is not None
        assert (job.trainer.num_nodes, job.trainer.num_proc_per_node) == (1000, 1024)

    def test_the_bound_is_the_one_configured_when_the_check_runs(self):
        with limits.overridden(replicas_per_job=4), pytest.raises(SpecError) as error:
            spec.parse_train_job(f.train_job(trainer={"numNodes": 5}))
        assert problems(error) == {
            "spec.trainer.numNodes": "must be at most 4 nodes (MAX_REPLICAS_PER_JOB), not 5"
        }
        assert spec.parse_train_job(f.train_job(trainer={"numNodes": 5}))


class TestTheRuntimesCounts:
    @pytest.mark.parametrize(
        ("body", "path", "message"),
        [
            (f.torch_runtime(num_nodes=100_000), "spec.mlPolicy.numNodes", NODES_PAST),
            (f.mpi_runtime(numProcPerNode=100_000), "spec.mlPolicy.mpi.numProcPerNode", PROCESSES_PAST),
            (
                f.runtime(f.replicated_job("worker", replicas=100_000)),
                "spec.template.spec.replicatedJobs[0].replicas",
                "must be at most 1000 replicas (MAX_REPLICAS_PER_JOB), not 100000",
            ),
            (
                f.runtime(f.replicated_job("worker", parallelism=100_000)),
                "spec.template.spec.replicatedJobs[0].template.spec.parallelism",
                "must be at most 1000 pods (MAX_REPLICAS_PER_JOB), not 100000",
            ),
        ],
    )
    def test_a_count_past_its_bound_is_named(self, body, path, message):
        with pytest.raises(SpecError) as error:
            spec.parse_runtime(body)
        assert problems(error) == {path: message}
        assert all(isinstance(problem, readers.TooMany) for problem in error.value.errors)


class TestThePodsOfTheResolvedJob:
    def test_the_trainers_nodes_and_the_other_steps_pods_are_counted_together(self):
        runtime = f.runtime(
            f.replicated_job("dataset-initializer", ancestor=c.DATASET_INITIALIZER),
            f.replicated_job("node", f.container(), ancestor=c.ANCESTOR_TRAINER),
            ml_policy={"numNodes": 1, "torch": {}},
        )
        assert resolve(f.train_job(trainer={"numNodes": 999}), runtime)
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(trainer={"numNodes": 1000}), runtime)
        assert problems(error) == {
            "spec.trainer.numNodes": "must be at most 1000 pods (MAX_REPLICAS_PER_JOB), not 1001: "
            "1000 nodes and 1 pod of the runtime's other steps"
        }
        assert all(isinstance(problem, readers.TooMany) for problem in error.value.errors)

    def test_a_runtime_whose_steps_multiply_past_the_bound_is_named_on_the_runtime_ref(self):
        runtime = f.runtime(
            f.replicated_job("node", f.container(), ancestor=c.ANCESTOR_TRAINER),
            f.replicated_job("worker", replicas=40, parallelism=40),
            ml_policy={"numNodes": 1, "torch": {}},
        )
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(), runtime)
        assert problems(error) == {
            "spec.runtimeRef.name": "ClusterTrainingRuntime 'test-runtime' runs 1601 pods: "
            "must be at most 1000 pods (MAX_REPLICAS_PER_JOB), not 1601"
        }

    def test_mpi_counts_its_launcher_beside_its_nodes(self):
        with limits.overridden(replicas_per_job=4):
            assert resolve(f.train_job(trainer={"numNodes": 3}), f.mpi_runtime())
            with pytest.raises(SpecError) as error:
                resolve(f.train_job(trainer={"numNodes": 4}), f.mpi_runtime())
        assert "not 5: 4 nodes and 1 pod" in problems(error)["spec.trainer.numNodes"]


class TestQuantitiesAreCheapWhateverTheirSize:
    @pytest.mark.parametrize("amount", ["1e999999", "1e1000000", "1e" + "9" * 5000, "1Ei", "9" * 5000])
    def test_a_huge_or_odd_quantity_is_read_at_once_and_capped_as_kubernetes_caps_it(self, amount):
        started = time.process_time()
        counted = readers.cpus_per_node({"requests": {"cpu": amount}})
        assert time.process_time() - started < 0.5
        assert 0 <= counted <= 2**63 - 1

    def test_a_huge_cpu_request_plans_at_once(self):
        job = f.train_job(trainer={"resourcesPerNode": {"requests": {"cpu": "1e999999"}}})
        started = time.process_time()
        desired = plan.plan(resolve(job, f.torch_runtime()))
        assert time.process_time() - started < 0.5
        env = {e["name"]: e.get("value") for e in desired.pods[0]["spec"]["containers"][0]["env"]}
        assert env["PET_NPROC_PER_NODE"] == str(2**63 - 1)
