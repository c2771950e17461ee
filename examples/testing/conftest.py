"""For roster's own suite only (`make test` runs these examples, pyproject.toml's testpaths):
the Spark example joins the suite's Spark tests on one pytest-xdist worker, so one SparkSession
serves them all. A copy of the examples needs nothing from this file."""
import pytest


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name == "test_spark_streaming_query.py" and \
                item.path.parent.name == "testing":
            item.add_marker(pytest.mark.xdist_group("spark"))
