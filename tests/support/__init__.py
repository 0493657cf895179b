"""Helpers shared by the tests, in one place: fake servers (fake_openai), offline tiny models (tiny_models)
and the shared data (data). Imported as `support.<module>`: pytest puts tests/ on sys.path for tests/conftest.py."""
