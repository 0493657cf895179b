"""How far the judges can be trusted: a jury's agreement, each judge's biases, the jury's stability under
rephrasing and resampling, the judge's grades of repeated outputs, and the metrics' agreement with people."""
