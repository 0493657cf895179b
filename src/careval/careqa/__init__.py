"""CareQA construction: MIR exam parsing, negative-question filter, review sampling, published layout."""
