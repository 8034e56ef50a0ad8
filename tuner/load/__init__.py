"""The load: httperf, the workloads it offers, access-log replay, load
generators on other hosts."""
