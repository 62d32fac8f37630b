import pytest
from hypothesis import HealthCheck, settings

# The harness's own tests are deterministic: fixed seeds, no example database.
settings.register_profile("harness", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much])
settings.load_profile("harness")


def _without_local_constants() -> None:
    # Hypothesis mixes into its draws constants read from the source of every local module
    # imported so far (providers._get_local_constants), so a derandomized census drew other
    # programs depending on which tests ran before it in the same xdist worker (half the
    # examples small: 50 % alone, 77 % after a reordering). Pinned empty, a test draws the
    # same examples in any order. (A private hook: without it, the tests still run.)
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.floats import float_to_int

        empty = providers.Constants(integers=providers.SortedSet(), floats=providers.SortedSet(key=float_to_int),
                                    bytes=providers.SortedSet(), strings=providers.SortedSet())
    except (ImportError, AttributeError, TypeError):
        return
    providers._get_local_constants = lambda: empty


_without_local_constants()


@pytest.fixture
def eager():
    from conformance.backends import get

    return get("eager")


def pytest_collection_modifyitems(config, items):
    # Longest first. Under xdist's worksteal each worker starts on one contiguous half of this
    # list and steals from the other's end when it runs dry: the slow tests (end-to-end nights,
    # 5-35 s each) open each half, alternately, so that no worker meets a long one last while
    # the other has nothing left to do.
    slow = [i for i in items if i.get_closest_marker("slow")]
    rest = [i for i in items if not i.get_closest_marker("slow")]
    ours, theirs = slow[0::2], slow[1::2]
    cut = max(0, len(items) // 2 - len(ours))
    items[:] = ours + rest[:cut] + theirs + rest[cut:]


@pytest.fixture(autouse=True)
def _leaves_torch_as_it_found_it():
    """A test that leaves torch's global state changed (inference mode on, a broken dispatch
    state: pytorch/pytorch#169477) fails itself, not the tests after it in its worker."""
    from conformance import grad_mode

    before = grad_mode.snapshot()
    yield
    assert grad_mode.broken() is None, f"the test left torch unable to run an op: {grad_mode.broken()}"
    assert grad_mode.snapshot() == before, f"the test left torch's global state changed: {grad_mode.snapshot()}"
