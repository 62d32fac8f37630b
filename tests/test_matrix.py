"""The conformance matrix reads each cell off a summary: mismatch, unsupported, agree, not run."""

from conformance.matrix import cells, write_matrix


def summary(mismatches, seen):
    return {"mismatches": mismatches, "construct_examples": seen, "examples": 10, "seconds": 1.0,
            "versions": {"torch": "x"}}


def mm(sig, repro="a/repro.py"):
    return {"signature": sig, "oracle": sig.split(".")[0], "repro": repro, "program": None}


def test_cells():
    s = summary([mm("flags.requires_grad | eager False, backend True | first call @ detach"),
                 mm("exceptions.backend raised during call | no exception / AttributeError during call: x")],
                {"detach": 3, "no_grad": 5, "plain ops": 2})
    c = cells(s)
    assert c[".detach()"][0] == "mismatch"
    assert c["with torch.no_grad()"][0] == "agree"
    assert c["with torch.inference_mode()"][0] == "not run"
    assert cells(None)["plain ops"][0] == "not run"


def test_exception_signatures_use_the_program(tmp_path):
    from conformance import serialize
    from conformance.program import Assign, Call, Program, RequiresGrad, TensorInput

    p = Program((TensorInput("a", (1,)),), (RequiresGrad("a"), Assign("t0", Call("sin", ("a",)))), ("t0",))
    m = mm("exceptions.backend raised during call | no exception / AttributeError during call: x")
    m["program"] = serialize.encode(p)
    c = cells(summary([m], {"requires_grad_": 4}))
    assert c[".requires_grad_()"][0] == "unsupported"


def test_write_matrix_links_each_mismatch_to_a_checked_in_repro(tmp_path):
    run = tmp_path / "run"
    (run / "a").mkdir(parents=True)
    (run / "a" / "repro.py").write_text("print('repro')\n")
    s = summary([mm("flags.requires_grad | eager False, backend True | first call @ detach")], {"detach": 1})
    path = write_matrix({"thunder": s, "other": None}, {"thunder": run, "other": run}, tmp_path / "docs")
    text = path.read_text()
    assert "| .detach() | mismatch [1](matrix/thunder/a.py" in text and "| not run |" in text
    assert (tmp_path / "docs" / "matrix" / "thunder" / "a.py").read_text() == "print('repro')\n"
