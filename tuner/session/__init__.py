"""A tuning session: the loop, its journal, the measured gain, the simplified
recommendation, the report's data and plots."""
