"""What a trial measures on the server: mod_status, the metrics collector,
cgroup CPU quotas, the sampler on a remote host."""
