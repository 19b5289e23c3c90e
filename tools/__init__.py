"""Developer tools: the offline plan, the mock engine it shares with the tests, validators."""
