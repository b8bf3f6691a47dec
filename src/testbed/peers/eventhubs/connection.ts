// Connections of the local Event Hubs peer: the AMQP container with its SASL mechanisms (ANONYMOUS, PLAIN, and
// MSSBCBS as the service offers it), the listening socket (TCP or TLS) with its connection counters, connection
// bookkeeping, and the faults that cut links or connections.
import type { Server, Socket } from "node:net";
import rhea from "rhea";
import type { Container, EventContext, Receiver, Sender } from "rhea";
import { connectionDropped, stateOf, type Peer } from "./peer.js";

/** The AMQP container, with the SASL mechanisms the SDKs use. */
export function createContainer(hubName: string): Container {
  const container = rhea.create_container({ id: `sef-eventhubs-${hubName}` });
  container.sasl_server_mechanisms.enable_anonymous();
  container.sasl_server_mechanisms.enable_plain(() => true);
  rhea.sasl.server_add_external(container.sasl_server_mechanisms);
  container.sasl_server_mechanisms["MSSBCBS"] = container.sasl_server_mechanisms["EXTERNAL"];
  return container;
}

/** Keeps the per-connection state and the readers of a connection only while it lives; logs protocol errors. */
export function trackConnections(peer: Peer, container: Container): void {
  container.on("connection_open", (context: EventContext) => {
    peer.stats.connectionsOpened++;
    stateOf(peer, context.connection);
  });
  const forget = (context: EventContext): void => {
    peer.connections.delete(context.connection);
    for (const [sender, stream] of peer.streams)
      if (stream.sender.connection === context.connection) peer.streams.delete(sender);
  };
  container.on("connection_close", forget);
  container.on("disconnected", forget);
  container.on("connection_error", () => undefined);
  container.on("protocol_error", (error: unknown) => {
    // azure-eventhub 5.11's pure-Python client ends a $management session before detaching its links; rhea then
    // closes that connection, which the client is closing anyway. Not worth a warning.
    const afterEnd = /received on invalid channel/.test(String((error as Error | undefined)?.message));
    peer.logger[afterEnd ? "debug" : "warn"]({ err: error }, "AMQP protocol error");
  });
  container.on("error", (err: unknown) => peer.logger.debug({ err }, "AMQP error"));
}

export interface ListenOptions {
  readonly port: number;
  readonly host: string;
  readonly tls: { keyPem: string; certPem: string } | undefined;
}

/** Listens (TCP, or TLS with the given identity); counts client sockets. Resolves once listening. */
export async function listenPeer(peer: Peer, container: Container, options: ListenOptions): Promise<Server> {
  const linkOptions = { max_message_size: peer.maxMessageSize };
  const server: Server = container.listen({
    port: options.port,
    host: options.host,
    transport: options.tls ? "tls" : "tcp",
    ...(options.tls ? { key: options.tls.keyPem, cert: options.tls.certPem } : {}),
    max_frame_size: 65536,
    channel_max: 4999,
    idle_time_out: 120_000,
    receiver_options: { ...linkOptions, autoaccept: false, credit_window: 1000 },
    sender_options: { ...linkOptions, autosettle: true },
  } as Parameters<typeof container.listen>[0]) as unknown as Server;
  server.on("connection", (socket: Socket) => {
    // Like the service, answer small frames (dispositions) at once: Nagle + delayed ACKs would stall a client ~40 ms.
    socket.setNoDelay(true);
    peer.sockets.add(socket);
    peer.stats.connectionsCurrent = peer.sockets.size;
    peer.stats.connectionsPeak = Math.max(peer.stats.connectionsPeak, peer.sockets.size);
    socket.on("close", () => {
      peer.sockets.delete(socket);
      peer.stats.connectionsCurrent = peer.sockets.size;
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.once("listening", () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (err) => peer.logger.warn({ err }, "listener error"));
  return server;
}

/** Force-detaches every open hub/partition link now (`amqp:link:detach-forced`). */
export function detachLinks(peer: Peer): void {
  for (const connection of peer.connections.keys()) {
    const links: Array<Sender | Receiver> = [];
    connection.each_link((link: Sender | Receiver) => {
      const linkAddress = String((link.is_receiver() ? link.target?.address : link.source?.address) ?? "");
      if (linkAddress !== "$cbs" && linkAddress !== "$management") links.push(link);
    });
    for (const link of links)
      link.close({
        condition: "amqp:link:detach-forced",
        description: "The link was force-detached (injected fault).",
      });
  }
}

/** Destroys every client connection now (no AMQP close: a network drop). */
export function dropConnections(peer: Peer): void {
  for (const socket of peer.sockets) socket.destroy(connectionDropped());
}
