"""Microsoft's Python Event Hubs client (Debian's python3-azure) against the local Event Hubs peer.

Usage: eventhubs_client.py CONNECTION_STRING CA_PEM pyamqp|uamqp [CONSUMER_GROUP]
Runs one scenario (properties, send, batches, receive from earliest/sequence/offset/latest) and prints one JSON
object with what the client saw. Every receive has a deadline; the script exits 1 on any error.
"""
import json
import sys
import threading
import traceback

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

RECEIVE_DEADLINE_S = 20.0


def client_options(ca_pem, transport):
    return {"connection_verify": ca_pem, "uamqp_transport": transport == "uamqp", "retry_total": 1}


def event_summary(event):
    return {
        "body": event.body_as_str(),
        "properties": {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in (event.properties or {}).items()
        },
        "partition_key": event.partition_key.decode() if isinstance(event.partition_key, bytes) else event.partition_key,
        "sequence_number": event.sequence_number,
        "offset": event.offset,
    }


def receive(conn, options, consumer_group, partition_id, want, starting_position, inclusive=False, send_after_start=None):
    """Receives `want` events from one partition; `send_after_start` runs once the receiver is attached."""
    consumer = EventHubConsumerClient.from_connection_string(conn, consumer_group, **options)
    received = []
    errors = []
    done = threading.Event()
    started = threading.Event()

    def on_event_batch(_context, events):
        started.set()
        received.extend(event_summary(e) for e in events)
        if len(received) >= want:
            done.set()

    def on_error(_context, error):
        errors.append(repr(error))
        done.set()

    worker = threading.Thread(
        target=consumer.receive_batch,
        kwargs={
            "on_event_batch": on_event_batch,
            "on_error": on_error,
            "partition_id": partition_id,
            "starting_position": starting_position,
            "starting_position_inclusive": inclusive,
            "max_wait_time": 0.2,
        },
        daemon=True,
    )
    worker.start()
    if send_after_start is not None:
        # max_wait_time makes the client call back (with an empty batch) once its link is attached.
        if not started.wait(RECEIVE_DEADLINE_S):
            raise RuntimeError("receiver did not attach")
        send_after_start()
    finished = done.wait(RECEIVE_DEADLINE_S)
    consumer.close()
    worker.join(10)
    if errors:
        raise RuntimeError(f"receive failed: {errors[0]}")
    if not finished:
        raise RuntimeError(f"received {len(received)} of {want} events from partition {partition_id} within {RECEIVE_DEADLINE_S}s")
    return received


def main():
    conn, ca_pem, transport = sys.argv[1], sys.argv[2], sys.argv[3]
    consumer_group = sys.argv[4] if len(sys.argv) > 4 else "$Default"
    options = client_options(ca_pem, transport)
    result = {}
    producer = EventHubProducerClient.from_connection_string(conn, **options)
    with producer:
        result["hub"] = {k: (str(v) if k == "created_at" else v) for k, v in producer.get_eventhub_properties().items()}
        result["partition_ids"] = producer.get_partition_ids()
        result["partition0_before"] = producer.get_partition_properties("0")
        producer.send_event(EventData("single"), partition_id="0")
        keyed = producer.create_batch(partition_key="vm-42")
        for i in range(3):
            event = EventData(f"keyed-{i}")
            event.properties = {"Index": i, "Kind": "keyed"}
            keyed.add(event)
        producer.send_batch(keyed)
        to_partition = producer.create_batch(partition_id="0")
        for i in range(2):
            to_partition.add(EventData(f"p0-{i}"))
        producer.send_batch(to_partition)
        result["partition0_after"] = producer.get_partition_properties("0")
        result["partition1_after"] = producer.get_partition_properties("1")
        result["max_batch_size_bytes"] = producer.create_batch().max_size_in_bytes

    for info in (result["partition0_before"], result["partition0_after"], result["partition1_after"]):
        info["last_enqueued_time_utc"] = str(info["last_enqueued_time_utc"])

    result["earliest"] = {pid: receive(conn, options, consumer_group, pid, want, "-1", False)
                          for pid, want in (("0", result["partition0_after"]["last_enqueued_sequence_number"] + 1),
                                            ("1", result["partition1_after"]["last_enqueued_sequence_number"] + 1))
                          if want > 0}
    first = result["earliest"]["0"][0]
    result["from_sequence_inclusive"] = receive(conn, options, consumer_group, "0", 2, 1, True)
    result["from_offset_exclusive"] = receive(conn, options, consumer_group, "0", 1, first["offset"], False)

    def send_latest():
        with EventHubProducerClient.from_connection_string(conn, **options) as late:
            late.send_event(EventData("latest"), partition_id="0")

    result["latest"] = receive(conn, options, consumer_group, "0", 1, "@latest", False, send_after_start=send_latest)
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - report any failure as the test's evidence
        traceback.print_exc()
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
