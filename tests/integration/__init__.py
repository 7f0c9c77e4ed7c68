"""Scripts that start their own processes (Lightning DDP, Ignite's idist.Parallel), run by tests/test_*.py."""
