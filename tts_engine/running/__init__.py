"""Running a solve: the run loop (resume, chunks, failures, progress), the results file, the summary, and the
launchers that spread a run over processes or a Ray cluster."""
