"""The studies' analyses (config `studies:`): each variant against its baseline, and the rephrasers' review sheet."""
