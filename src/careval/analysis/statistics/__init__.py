"""The statistics of the analysis: bootstrap intervals, correlations, paired model comparisons, reliability,
clusters, rankings and the spread of repeated outputs (resilience, self-consistency). No figures here."""
