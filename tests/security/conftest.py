from tests.toolkit.conftest import recorded_http  # noqa: F401 - the arXiv download is served from a fixture
