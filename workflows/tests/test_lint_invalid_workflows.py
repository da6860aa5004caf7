"""Invalid workflow specs, one reason each: the linter reports exactly that reason, as Argo words it."""

from __future__ import annotations

import textwrap

import pytest

from workflows.lint import LintError, TemplateIndex, lint_document, load_documents

HEADER = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  generateName: case-\n"

# A ClusterWorkflowTemplate some cases call through templateRef.
COMMON_TEMPLATES = TemplateIndex.from_documents(
    load_documents(
        """
apiVersion: argoproj.io/v1alpha1
kind: ClusterWorkflowTemplate
metadata:
  name: common
spec:
  templates:
  - name: echo
    inputs:
      parameters:
      - name: message
    container:
      image: alpine
      args: ["{{inputs.parameters.message}}"]
"""
    )
)


def workflow(spec: str, *, header: str = HEADER) -> dict:
    """A Workflow document from the (indented) YAML of its spec."""
    spec = textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ")
    return load_documents(f"{header}spec:\n{spec}")[0]


CASES = [
    pytest.param(
        """
            entrypoint: main
            entrypoints: main
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.entrypoints",
        'unknown field "spec.entrypoints"',
        id="unknown-field-in-spec",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              container: {image: alpine, comand: [echo]}
        """,
        "spec.templates[0].container.comand",
        'unknown field "spec.templates[0].container.comand"',
        id="unknown-field-in-container",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: leaf
                  argument: {}
            - name: leaf
              container: {image: alpine}
        """,
        "spec.templates[0].steps[0][0].argument",
        'unknown field "spec.templates[0].steps[0][0].argument"',
        id="unknown-field-in-step",
    ),
    pytest.param(
        """
            entrypoint: main
            parallelism: two
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.parallelism",
        "cannot unmarshal string into spec.parallelism of type integer",
        id="wrong-type",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - name: a
                template: echo
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "spec.templates[0].steps[0]",
        "cannot unmarshal object into spec.templates[0].steps[0] of type array",
        id="steps-not-a-list-of-lists",
    ),
    pytest.param(
        """
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.entrypoint",
        "spec.entrypoint is required",
        id="missing-entrypoint",
    ),
    pytest.param(
        """
            entrypoint: start
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.entrypoint",
        "spec.entrypoint template name 'start' undefined",
        id="entrypoint-undefined",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: nope
        """,
        "templates.main.steps[0].a",
        "templates.main.steps[0].a template name 'nope' undefined",
        id="step-template-undefined",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: echo
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "templates.main.steps[0].a",
        "templates.main.steps[0].a templates.echo inputs.parameters.message was not supplied",
        id="input-parameter-not-supplied",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: read
            - name: read
              inputs: {artifacts: [{name: data, path: /data}]}
              container: {image: alpine}
        """,
        "templates.main.steps[0].a",
        "templates.main.steps[0].a templates.read inputs.artifacts.data was not supplied",
        id="input-artifact-not-supplied",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              container: {image: alpine}
            - name: main
              container: {image: busybox}
        """,
        "spec.templates[1].name",
        "spec.templates[1].name 'main' is not unique",
        id="duplicate-template-name",
    ),
    pytest.param(
        """
            entrypoint: my_main
            templates:
            - name: my_main
              container: {image: alpine}
        """,
        "spec.templates[0].name",
        "spec.templates[0].name: 'my_main' is invalid: name must consist of alpha-numeric characters or "
        "'-', and must start with an alpha-numeric character (e.g. My-name1-2, 123-NAME)",
        id="invalid-template-name",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              inputs: {}
        """,
        "templates.main",
        "templates.main template type unspecified. choose one of: container, containerSet, steps, "
        "script, resource, dag, suspend, template, template ref",
        id="no-template-type",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              container: {image: alpine}
              suspend: {}
        """,
        "templates.main",
        "templates.main multiple template types specified. choose one of: container, containerSet, "
        "steps, script, resource, dag, suspend, template, template ref",
        id="two-template-types",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - template: leaf
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.steps[0].name",
        "templates.main.steps[0].name is required",
        id="step-without-name",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - {name: a, template: leaf}
              - - {name: a, template: leaf}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.steps[1].name",
        "templates.main.steps[1].name 'a' is not unique",
        id="duplicate-step-name",
    ),
    pytest.param(
        """
            entrypoint: main
            arguments: {parameters: [{name: 'my param', value: x}]}
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.arguments.parameters[0].name",
        "spec.arguments.parameters[0].name: 'my param' is invalid: Parameter/Artifact name must consist "
        "of alpha-numeric characters, '_' or '-' e.g. my_param_1, MY-PARAM-1",
        id="invalid-parameter-name",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              container: {image: alpine, args: ['{{inputs.parameters.message}}']}
        """,
        "templates.main",
        "templates.main: failed to resolve {{inputs.parameters.message}}",
        id="undeclared-input-reference",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              container: {image: alpine, args: ['{{workflow.parameters.size}}']}
        """,
        "templates.main",
        "templates.main: failed to resolve {{workflow.parameters.size}}",
        id="undefined-workflow-parameter",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: echo
                  arguments:
                    parameters: [{name: message, value: '{{steps.b.outputs.result}}'}]
              - - name: b
                  template: echo
                  arguments: {parameters: [{name: message, value: hi}]}
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "templates.main.steps[0].a",
        "templates.main.steps failed to resolve {{steps.b.outputs.result}}",
        id="reference-to-a-later-step",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: echo
                  arguments:
                    parameters: [{name: message, value: '{{item.colour}}'}]
                  withItems: [{size: 1}]
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "templates.main.steps[0].a",
        "templates.main.steps failed to resolve {{item.colour}}",
        id="item-key-not-in-withItems",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: echo
                  arguments: {parameters: [{name: message, value: '{{item}}'}]}
                  withItems: [1, 2]
                  withParam: '[1, 2]'
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "templates.main.steps[0].a",
        "templates.main.steps[0].a only one of withItems, withParam, withSequence can be specified",
        id="two-loops",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: echo
                  arguments: {parameters: [{name: message, value: '{{item}}'}]}
                  withSequence: {count: '3', end: '5'}
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "templates.main.steps[0].a",
        "templates.main.steps[0].a only one of count or end can be defined in withSequence",
        id="sequence-with-count-and-end",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf}
                - {name: B, template: leaf, depends: C}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.tasks.B",
        "templates.main.tasks.B dependency 'C' not defined",
        id="undefined-dependency",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf, dependencies: [B]}
                - {name: B, template: leaf, dependencies: [A]}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.tasks",
        "templates.main.tasks dependency cycle detected: A->B->A",
        id="dependency-cycle",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf}
                - {name: B, template: leaf, depends: A}
                - {name: C, template: leaf, dependencies: [A]}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main cannot use both 'depends' and 'dependencies' in the same DAG template",
        id="depends-and-dependencies",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf}
                - {name: B, template: leaf, depends: A.Finished}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.tasks.B",
        "templates.main.tasks.B task result 'Finished' for task 'A' is invalid",
        id="unknown-task-result",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf}
                - {name: B, template: leaf, depends: 'A &&'}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.tasks.B",
        "templates.main.tasks.B depends expression 'A &&' is not a valid expression",
        id="malformed-depends",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf}
                - name: B
                  template: leaf
                  when: "'{{tasks.A.status}}' == Succeeded"
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.tasks.B",
        "templates.main.tasks.B failed to resolve {{tasks.A.status}}",
        id="status-of-a-task-that-is-no-ancestor",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: echo, arguments: {parameters: [{name: message, value: hi}]}}
                - name: B
                  template: echo
                  arguments: {parameters: [{name: message, value: '{{tasks.A.outputs.result}}'}]}
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "templates.main.tasks.B",
        "templates.main.tasks.B missing dependency 'A' for parameter 'message'",
        id="argument-from-a-task-it-does-not-depend-on",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf, continueOn: {failed: true}}
                - {name: B, template: leaf, depends: A}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main cannot use 'continueOn' when using 'depends'. Instead use "
        "'dep-task.Failed'/'dep-task.Errored'",
        id="continueOn-with-depends",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                target: A Z
                tasks:
                - {name: A, template: leaf}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.targets",
        "templates.main.targets: target 'Z' is not defined",
        id="undefined-target",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag: {tasks: []}
        """,
        "templates.main",
        "templates.main must have at least one task",
        id="dag-without-tasks",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: 1st, template: leaf}
                - {name: second, template: leaf, depends: 1st}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.tasks.1st",
        "templates.main.tasks.1st name cannot begin with a digit when using either 'depends' or "
        "'dependencies'",
        id="task-name-starting-with-a-digit",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              dag:
                tasks:
                - {name: A, template: leaf}
                - {name: B, template: leaf, depends: A.AnySucceeded}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.tasks.B",
        "templates.main.tasks.B dependency 'A' uses an items-based condition such as .AnySucceeded or "
        ".AllFailed but does not contain any items",
        id="items-condition-on-a-task-without-items",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              retryStrategy: {retryPolicy: Sometimes}
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main Sometimes is not a valid RetryPolicy",
        id="unknown-retry-policy",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              activeDeadlineSeconds: 60
              steps:
              - - {name: a, template: leaf}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.activeDeadlineSeconds",
        "templates.main.activeDeadlineSeconds is only valid for leaf templates",
        id="deadline-on-a-steps-template",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              activeDeadlineSeconds: -5
              container: {image: alpine}
        """,
        "templates.main.activeDeadlineSeconds",
        "templates.main.activeDeadlineSeconds must be a positive integer > 0 or an argo variable",
        id="negative-deadline",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              parallelism: 2
              container: {image: alpine}
        """,
        "templates.main.parallelism",
        "templates.main.parallelism is only valid for steps and dag templates",
        id="parallelism-on-a-container",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              timeout: 1h
              steps:
              - - {name: a, template: leaf}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main Steps template doesn't support timeout field",
        id="timeout-on-a-steps-template",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              timeout: '30'
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main main has invalid duration format in timeout",
        id="timeout-without-unit",
    ),
    pytest.param(
        """
            entrypoint: main
            podGC: {strategy: Sometimes}
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.podGC.strategy",
        "podGC.strategy unknown strategy 'Sometimes'",
        id="unknown-podGC-strategy",
    ),
    pytest.param(
        """
            entrypoint: main
            podGC:
              strategy: OnPodSuccess
              labelSelector:
                matchExpressions: [{key: app, operator: Maybe, values: [x]}]
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.podGC.labelSelector",
        'podGC.labelSelector invalid: "Maybe" is not a valid label selector operator',
        id="invalid-podGC-label-selector",
    ),
    pytest.param(
        """
            entrypoint: main
            ttlStrategy: {secondsAfterCompletion: -1}
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.ttlStrategy.secondsAfterCompletion",
        "ttlStrategy.secondsAfterCompletion must not be negative",
        id="negative-ttl",
    ),
    pytest.param(
        """
            entrypoint: main
            hooks: {running: {template: main}}
            templates:
            - name: main
              container: {image: alpine}
        """,
        "hooks.running",
        "hooks.running Expression required",
        id="hook-without-expression",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: leaf
                  hooks: {exit: {template: notify}}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.steps[0].a.exit",
        "templates.main.steps[0].a.exit template name 'notify' undefined",
        id="hook-template-undefined",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              resource: {action: upsert, manifest: 'kind: ConfigMap'}
        """,
        "templates.main.resource.action",
        "templates.main.resource.action must be one of: get, create, apply, delete, replace, patch",
        id="unknown-resource-action",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              resource:
                action: create
                manifest: 'kind: [ConfigMap'
        """,
        "templates.main.resource.manifest",
        "templates.main.resource.manifest must be a valid yaml",
        id="resource-manifest-not-yaml",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              resource: {action: create}
        """,
        "templates.main.resource",
        "either templates.main.resource.manifest or templates.main.resource.manifestFrom must be specified",
        id="resource-without-manifest",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              inputs: {artifacts: [{name: data, path: /data, raw: {data: hi}}]}
              container:
                image: alpine
                volumeMounts: [{name: data, mountPath: /data}]
        """,
        "templates.main.inputs.artifacts[0].path",
        "templates.main.inputs.artifacts[0].path '/data' already mounted in container.volumeMounts.data",
        id="artifact-path-over-a-volume-mount",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              container: {command: [echo]}
        """,
        "templates.main.container.image",
        "templates.main.container.image may not be empty",
        id="container-without-image",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              metrics: {prometheus: [{name: my-metric, help: h, counter: {value: '1'}}]}
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main metric name 'my-metric' is invalid. Metric names must contain alphanumeric "
        "characters or '_'",
        id="invalid-metric-name",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              metrics: {prometheus: [{name: runs, counter: {value: '1'}}]}
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main metric 'runs' must contain a help string under 'help: ' field",
        id="metric-without-help",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              outputs: {parameters: [{name: out}]}
              container: {image: alpine}
        """,
        "templates.main.outputs.parameters.out",
        "templates.main.outputs.parameters.out does not have valueFrom or value specified",
        id="output-parameter-without-source",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              outputs: {parameters: [{name: out, valueFrom: {jsonPath: '{.a}'}}]}
              container: {image: alpine}
        """,
        "templates.main.outputs.parameters.out",
        "templates.main.outputs.parameters.out.path must be specified for Container templates",
        id="container-output-parameter-without-path",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              outputs: {artifacts: [{name: result, path: /tmp/out}]}
              steps:
              - - {name: a, template: leaf}
            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.outputs.artifacts.result.path",
        "templates.main.outputs.artifacts.result.path only valid in container/script templates",
        id="artifact-path-on-a-steps-template",
    ),
    pytest.param(
        """
            entrypoint: main
            onExit: bye
            templates:
            - name: main
              container: {image: alpine, args: ['{{workflow.failures}}']}
            - name: bye
              container: {image: alpine}
        """,
        "templates.main",
        "templates.main: failed to resolve {{workflow.failures}}",
        id="workflow-failures-outside-the-exit-handler",
    ),
    pytest.param(
        """
            entrypoint: main
            onExit: cleanup
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.onExit",
        "spec.onExit template name 'cleanup' undefined",
        id="exit-handler-undefined",
    ),
    pytest.param(
        """
            entrypoint: main
            arguments: {parameters: [{name: colour, value: red, enum: [blue, green]}]}
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.arguments.colour",
        "spec.arguments.colour.value should be present in spec.arguments.colour.enum list",
        id="argument-not-in-its-enum",
    ),
    pytest.param(
        """
            entrypoint: main
            arguments: {parameters: [{name: size, valueFrom: {path: /tmp/size}}]}
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.arguments.size",
        "spec.arguments.size.valueFrom only allows: default, configMapKeyRef and supplied",
        id="argument-valueFrom-path",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  templateRef: {name: common, template: shout, clusterScope: true}
        """,
        "templates.main.steps[0].a",
        "templates.main.steps[0].a template reference common.shout not found",
        id="templateRef-not-found",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - name: a
                  template: echo
                  templateRef: {name: common, template: echo, clusterScope: true}
                  arguments: {parameters: [{name: message, value: hi}]}
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]
        """,
        "templates.main.steps[0].a",
        "templates.main.steps[0].a template name cannot be specified with templateRef",
        id="template-and-templateRef",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              steps:
              - - {name: a, template: leaf}
              - - name: b
                  template: echo
                  arguments: {parameters: [{name: message, value: '{{steps.a.ip}}'}]}
            - name: echo
              inputs:
                parameters:
                - name: message
              container:
                image: alpine
                args: ["{{inputs.parameters.message}}"]

            - name: leaf
              container: {image: alpine}
        """,
        "templates.main.steps[1].b",
        "templates.main.steps failed to resolve {{steps.a.ip}}",
        id="ip-of-a-step-that-is-no-daemon",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              inputs: {artifacts: [{name: src, path: /src, git: {revision: main}}]}
              container: {image: alpine}
        """,
        "templates.main.inputs.artifacts.src.git.repo",
        "templates.main.inputs.artifacts.src.git.repo is required",
        id="git-artifact-without-repo",
    ),
    pytest.param(
        """
            entrypoint: main
            templates:
            - name: main
              outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
              containerSet: {containers: [{name: first, image: alpine}]}
        """,
        "templates.main.containerSet.containers",
        'templates.main.containerSet.containers must have a container named "main" for input or output',
        id="container-set-outputs-without-main",
    ),
    pytest.param(
        """
            entrypoint: echo
            workflowTemplateRef: {name: common, clusterScope: true}
            arguments: {parameters: [{name: message, value: hi}]}
            templates:
            - name: main
              container: {image: alpine}
        """,
        "spec.templates",
        "Templates is invalid field in spec if workflow referred WorkflowTemplate reference",
        id="templates-beside-workflowTemplateRef",
    ),
]


@pytest.mark.parametrize(("spec", "path", "message"), CASES)
def test_an_invalid_workflow_gets_exactly_its_error(spec: str, path: str, message: str):
    result = lint_document(workflow(spec), COMMON_TEMPLATES)
    assert result.errors == (LintError(path, message),)


def test_every_problem_of_a_document_is_reported_not_just_the_first():
    document = workflow(
        """
        entrypoint: main
        templates:
        - name: main
          steps:
          - - name: a
              template: nope
          - - name: b
              template: echo
        - name: echo
          inputs: {parameters: [{name: message}]}
          container: {image: alpine, args: ["{{inputs.parameters.message}}"]}
        """
    )
    assert lint_document(document).messages == [
        "templates.main.steps[0].a template name 'nope' undefined",
        "templates.main.steps[1].b templates.echo inputs.parameters.message was not supplied",
    ]
