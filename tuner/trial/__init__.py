"""One trial and what it proves: the trial runner, the pool check, the
bottleneck verdict, bench's plots."""
