"""The search over configurations: the space, its lint, the optimizer, the
surrogate and the recommendation. It knows nothing of how a trial runs."""
