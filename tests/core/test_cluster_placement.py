"""Where a Ray point goes (``Placer``): every node gets work from the first point, a node with
more room takes more, a retry goes elsewhere where it can, a GPU point only where a GPU is.
Plain logic over node records shaped as ``ray.nodes()`` returns them (the two-node cluster
test in test_sweep_ray.py runs it on real Ray)."""

from __future__ import annotations

from deploylens.core.cluster import Call, Placer


def node(name: str, cpus: float, gpus: float = 0.0, alive: bool = True) -> dict:
    resources = {"CPU": cpus, "memory": 1e9, f"node:{name}": 1.0}
    if gpus:
        resources["GPU"] = gpus
    return {"NodeID": name, "Alive": alive, "Resources": resources}


def point(key: str, cpus: float = 1.0, gpus: float = 0.0) -> Call:
    return Call(key, "m:f", {}, cpus=cpus, gpus=gpus)


def test_two_one_cpu_nodes_each_take_a_point_then_wait_for_room() -> None:
    placer = Placer([node("head", 1), node("second", 1)])
    first, second = placer.take(point("a")), placer.take(point("b"))
    assert {first, second} == {"head", "second"}
    assert placer.take(point("c")) is None and placer.fits_anywhere(point("c"))
    placer.give_back("second", point("b"))
    assert placer.take(point("c")) == "second"


def test_a_bigger_node_takes_more_points_and_a_dead_one_none() -> None:
    placer = Placer([node("big", 3), node("small", 1), node("gone", 8, alive=False)])
    taken = [placer.take(point(str(i))) for i in range(5)]
    assert taken[:4].count("big") == 3 and taken[:4].count("small") == 1
    assert taken[4] is None


def test_a_retry_goes_to_another_node_when_one_has_room_and_back_when_none_has() -> None:
    placer = Placer([node("a", 2), node("b", 2)])
    assert placer.take(point("x"), avoid="a") == "b"
    assert placer.take(point("y"), avoid="b") == "a"
    assert placer.take(point("z"), avoid="") == "b"  # the node used longest ago
    assert placer.take(point("w"), avoid="b") == "a"
    placer.give_back("b", point("z"))
    assert placer.take(point("v"), avoid="b") == "b"  # only b has room: it is still tried


def test_gpu_points_go_only_where_a_gpu_is_and_one_no_node_holds_fits_nowhere() -> None:
    placer = Placer([node("cpu", 16), node("gpu", 4, gpus=1)])
    assert placer.take(point("g", gpus=1)) == "gpu"
    assert placer.take(point("g2", gpus=1)) is None and placer.fits_anywhere(point("g2", gpus=1))
    assert not placer.fits_anywhere(point("huge", cpus=32))
