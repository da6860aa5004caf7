"""A TrainJob's progress reports (Kubeflow KEP-2779): what its pods are given to push them (`server`), the
endpoint they push to (`view`), a report read and checked once (`update`), and who may report and the
write (`reporting`)."""
