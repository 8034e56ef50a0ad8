"""Statistics the tuner's comparisons share: the ratio of two configs' figures and its interval."""
