"""A capture taken from a mongod's profiler (and oplog) replays against a mongod, with the
fidelity Flashback lacked: multi updates and removes, count with its query, findAndModify with its
options, getMore continuing its find. Skips with the reason when there is no mongod binary."""
import threading

import pytest

from conftest import NO_MONGOD, mongod_binary

pytestmark = pytest.mark.skipif(mongod_binary() is None, reason=NO_MONGOD)


@pytest.fixture
def deployment(tmp_path):
    from enginebench.mongod import launch
    from enginebench.mongod.binary import identify
    from enginebench.mongod.topology import plan_deployment
    plan = plan_deployment("fb", {"topology": "replset", "members": 1}, identify(mongod_binary()), [],
                           tmp_path / "data", tmp_path / "logs")
    running = launch.Deployment(plan).start()
    try:
        yield plan.uri
    finally:
        running.stop()


def _traffic(db):
    db.posts.insert_many([{"_id": i, "user": i % 4, "likes": 0} for i in range(40)])
    db.posts.update_many({"user": 1}, {"$inc": {"likes": 1}})
    db.posts.delete_many({"user": 3})
    # The count command itself: count_documents sends an aggregate, which the profiler records as
    # op "command", so no "count" op would ever be captured.
    db.command("count", "posts", query={"user": 2})
    db.counters.find_one_and_update({"_id": "n"}, {"$inc": {"seq": 1}}, upsert=True, return_document=True,
                                    sort=[("_id", 1)], projection={"seq": 1})
    list(db.posts.find({"user": 0}).batch_size(3))  # a find and its getMores


def test_profiler_capture_replays_against_mongod(deployment, tmp_path):
    import pymongo
    from enginebench.flashback import format as F
    from enginebench.flashback.capture_mongo import capture
    from enginebench.flashback.execute_mongo import executor_for
    from enginebench.flashback.replay import Replayer
    from enginebench.runner.phases import run_phase
    from enginebench.stores.mongo import MongoStore

    client = pymongo.MongoClient(deployment)
    done = threading.Timer(1.0, _traffic, args=(client.app,))
    done.start()
    counts = capture(client, ["app"], duration_s=4.0, path=tmp_path / "ops.jsonl")
    done.join()
    ops = list(F.read_capture(tmp_path / "ops.jsonl").ops())
    kinds = {o["op"] for o in ops}
    assert {"insert", "update", "remove", "count", "findandmodify", "query", "getmore"} <= kinds, counts
    assert any(o["op"] == "update" and o["command"]["updates"][0].get("multi") for o in ops)

    client.drop_database("app")  # replay onto an empty database: the writes must recreate the state
    store = MongoStore(deployment, "app")
    replayer = Replayer(ops, style="real", speedup=4.0, workers=2, prepare=executor_for(store))
    result = run_phase("run", replayer.workers(), store, lambda e: None, interval_s=1.0, duration_s=None,
                       abort=threading.Event(), max_errors=1000)
    assert not result["aborted"]
    stats = replayer.merged()
    assert stats.skipped == {} and sum(stats.run.values()) == len(ops)
    assert client.app.posts.count_documents({}) == 30          # delete_many removed all 10 of user 3
    assert client.app.posts.count_documents({"likes": 1}) == 10  # update_many reached every user-1 post
    assert client.app.counters.find_one({"_id": "n"})["seq"] == 1
    store.close()
    client.close()
