"""Spreading one run over several processes: shards of `tts solve` workers (one per GPU or CPU worker, merged in
problem order) or a Ray cluster's actors pulling chunks, with the driver as the one writer."""
