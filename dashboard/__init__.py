"""The web dashboard: server-rendered pages of jobs, sweeps, TensorBoards and GC for practitioners."""
