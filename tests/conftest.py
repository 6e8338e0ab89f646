"""Shared test setup: GPU and network tests are opt-in, and every test runs offline."""

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--run-gpu", action="store_true", help="run tests marked gpu")
    parser.addoption("--run-network", action="store_true", help="run tests marked network")
    parser.addoption("--run-long", action="store_true", help="run tests marked long (several minutes each)")


def pytest_configure(config):
    # Before any test module imports datasets or huggingface_hub: they read these once, at import, and
    # would otherwise retry unreachable hosts for many seconds in every offline test.
    if not config.getoption("--run-network"):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"


def pytest_collection_modifyitems(config, items):
    for marker, option in (("gpu", "--run-gpu"), ("network", "--run-network"), ("long", "--run-long")):
        if config.getoption(option):
            continue
        skip = pytest.mark.skip(reason=f"needs {option}")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, request, tmp_path_factory):
    """Keep the hub clients offline and the data cache inside the test session."""
    if "network" not in request.keywords:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("RESEARCH_CREW_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


# The protocol-exact model API server (tests/apiserver) for every test that runs a crew against a model.
from tests.apiserver.fixture import api_server  # noqa: E402,F401
from tests.cluster.fixture import slurm_cluster  # noqa: E402,F401
