"""The generator of the protobuf table reads generated.proto and Go structs as k8s.io/api writes them (the
sources themselves are not needed to run the tests; these snippets are shaped as theirs)."""

from __future__ import annotations

from kubesim.server import protogen

PROTO = """
syntax = "proto2";

package k8s.io.api.core.v1;

import "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";

// Volume represents a named volume in a pod.
message Volume {
  // name of the volume.
  optional string name = 1;

  optional VolumeSource volumeSource = 2;
}

message ResourceRequirements {
  map<string, .k8s.io.apimachinery.pkg.api.resource.Quantity> limits = 1;

  repeated ResourceClaim claims = 3;
}

// +protobuf.nullable=true
message ExtraValue {
  repeated string items = 1;
}
"""

GO = """
type Volume struct {
	// name of the volume.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	VolumeSource `json:"" protobuf:"bytes,2,opt,name=volumeSource"`
}

type Pod struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`
}

type ExtraValue []string
"""


def test_messages_fields_maps_and_references_are_read_from_the_proto() -> None:
    messages = protogen.parse_proto(PROTO)
    assert messages["k8s.io.api.core.v1.Volume"] == [
        protogen.ProtoField(1, "name", "string", False),
        protogen.ProtoField(2, "volumeSource", "k8s.io.api.core.v1.VolumeSource", False),
    ]
    limits, claims = messages["k8s.io.api.core.v1.ResourceRequirements"]
    assert limits == protogen.ProtoField(
        1, "limits", "map", False, "k8s.io.apimachinery.pkg.api.resource.Quantity"
    )
    assert claims == protogen.ProtoField(3, "claims", "k8s.io.api.core.v1.ResourceClaim", True)


def test_go_tags_give_json_names_inline_embedding_omitempty_and_pointers() -> None:
    structs, slices = protogen.parse_go(GO)
    assert structs["Volume"] == {
        1: protogen.GoField("name", omitempty=False, pointer=False),
        2: protogen.GoField("", omitempty=False, pointer=False),  # embedded without a JSON name: inline
    }
    assert structs[
        "Pod"
    ] == {  # TypeMeta has no protobuf field; an embedded ObjectMeta named in JSON is not inline
        1: protogen.GoField("metadata", omitempty=True, pointer=False),
        2: protogen.GoField("replicas", omitempty=True, pointer=True),
    }
    assert slices == {"ExtraValue": "string"}
