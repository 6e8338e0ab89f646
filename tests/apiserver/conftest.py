from tests.apiserver.fixture import api_server  # noqa: F401 - registers the fixture for these tests
