/**
 * A file-system error in the words `ls` and the shell use ("no such file"), for messages that
 * already name the path: Node's own message repeats the path and leads with the errno code.
 */
export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "EISDIR") return "is a directory";
  if (code === "ENOTDIR") return "a part of the path is not a directory";
  return code ?? (error instanceof Error ? error.message : String(error));
}
