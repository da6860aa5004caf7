"""AdmissionReview v1 endpoints: validate our resources (and embedded Argo specs), mutate with defaults."""
