// Starts a server listening and resolves with the port it got (port 0 = any free one); a bind error rejects.
import type { AddressInfo, Server } from "node:net";

export async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
