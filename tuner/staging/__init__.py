"""Where trials run: the staging sandbox, the targets (local, existing, remote)
and their safe workflow, the pool a configuration sets up, network isolation
and WAN emulation."""
