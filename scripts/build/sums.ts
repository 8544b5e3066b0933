/** SHA-256 sums in the format `sha256sum` writes and `sha256sum -c` checks. */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

export interface FileSum {
  /** The name as `sha256sum -c` will open it, relative to the sums file's directory. */
  readonly file: string;
  readonly sha256: string;
}

/**
 * One `<hex>  <name>` line per file (two spaces: text mode, which is what GNU sha256sum writes on
 * Linux and reads back), sorted by name. Names sha256sum would have to escape are refused.
 */
export function formatSha256Sums(sums: readonly FileSum[]): string {
  const lines = [...sums]
    .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
    .map(({ file, sha256 }) => {
      if (!/^[0-9a-f]{64}$/.test(sha256)) {
        throw new Error(`not a lowercase hex SHA-256 for ${JSON.stringify(file)}`);
      }
      if (file === "" || /[\n\r\\]/.test(file)) {
        throw new Error(`file name ${JSON.stringify(file)} cannot go in a sums file unescaped`);
      }
      return `${sha256}  ${file}\n`;
    });
  return lines.join("");
}

export function sha256OfFile(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolve(hash.digest("hex")));
  });
}
