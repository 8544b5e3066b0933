/**
 * Transport compatibility (harness.ts): the JDK's java.net.http.HttpClient over HTTP/1.1, Teku's
 * external signer client, run as `java Driver.java` (single-file source launch, no build step).
 */
import { join } from "node:path";
import { DRIVERS, driverSuite, requireCommand } from "./harness";

driverSuite({
  id: "java",
  title: "Java java.net.http.HttpClient",
  client: "Teku",
  async prepare() {
    const java = requireCommand("java", "apt-get install openjdk-17-jdk-headless", "java");
    return {
      command: [
        java,
        // The JDK refuses a Connection request header unless this names it (the close scenario).
        "-Djdk.httpclient.allowRestrictedHeaders=connection",
        join(DRIVERS, "Driver.java"),
      ],
    };
  },
});
