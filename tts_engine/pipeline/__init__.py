"""Samples in, typed records out: answers read and grouped, graded, verified, voted, calibrated. Every strategy
calls it the same way."""
