import qoslab


def test_version_comes_from_the_rust_core() -> None:
    assert qoslab.__version__.count(".") == 2
