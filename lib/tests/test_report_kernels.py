"""The report's kernels: two rendered at once (two test workers, two `make experiment`s) must not
share their sockets."""
import asyncio
import os

from enginebench.experiment import KERNEL, local_kernel_manager


def test_two_kernels_started_in_one_directory_each_answer_their_own_client(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # jupyter_client's default socket path is relative to it
    managers = [local_kernel_manager()(kernel_name=KERNEL) for _ in range(2)]
    assert managers[0].transport == managers[1].transport == "ipc"
    assert managers[0].ip != managers[1].ip
    assert all(os.path.isabs(km.ip) and len(km.ip) < 80 for km in managers)

    async def run_both():
        await asyncio.gather(*(km.start_kernel() for km in managers))
        try:
            for index, km in enumerate(managers):
                client = km.client()
                client.start_channels()
                await client.wait_for_ready(timeout=60)
                reply = await client.execute_interactive(f"print({index} * 7)", timeout=60,
                                                         output_hook=lambda msg: outputs.append((index, msg)))
                assert reply["content"]["status"] == "ok"
                client.stop_channels()
        finally:
            await asyncio.gather(*(km.shutdown_kernel(now=True) for km in managers))

    outputs = []
    asyncio.run(run_both())
    printed = [(i, m["content"]["text"].strip()) for i, m in outputs if m["msg_type"] == "stream"]
    assert printed == [(0, "0"), (1, "7")]
    assert not any(name.startswith("kernel-ipc") for name in os.listdir(tmp_path))
