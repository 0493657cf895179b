"""Analyses over the scores: aggregation, correlations and the figures."""
