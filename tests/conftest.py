import pytest
from hypothesis import HealthCheck, settings

# The harness's own tests are deterministic: fixed seeds, no example database.
settings.register_profile("harness", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much])
settings.load_profile("harness")


@pytest.fixture
def eager():
    from conformance.backends import get

    return get("eager")
