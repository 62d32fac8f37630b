"""Every construct of the generator at once, under call schedules of every ambient mode."""

from conformance.suite import examples


def test_all_constructs(check):
    check("everything", examples())
