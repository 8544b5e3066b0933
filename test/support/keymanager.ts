/** A client of the Key Manager API's keystore routes, for tests against a running signer. */

export const KEYSTORES_PATH = "/eth/v1/keystores";

/** fetch() options for a JSON request (no body when `body` is undefined). */
export const jsonInit = (method: string, body?: unknown): RequestInit => ({
  method,
  headers: { "content-type": "application/json", accept: "application/json" },
  body: body === undefined ? undefined : JSON.stringify(body),
});

export async function importKeys(url: string, body: unknown) {
  const response = await fetch(`${url}${KEYSTORES_PATH}`, jsonInit("POST", body));
  return {
    status: response.status,
    body: (await response.json()) as {
      data: { status: string; message?: string }[];
      code?: string;
      message?: string;
    },
  };
}

export async function deleteKeys(url: string, pubkeys: string[]) {
  const response = await fetch(`${url}${KEYSTORES_PATH}`, jsonInit("DELETE", { pubkeys }));
  return {
    status: response.status,
    body: (await response.json()) as {
      data: { status: string; message?: string }[];
      slashing_protection: string;
    },
  };
}

export async function listKeys(url: string) {
  const response = await fetch(`${url}${KEYSTORES_PATH}`);
  return (await response.json()) as { data: { validating_pubkey: string; readonly: boolean }[] };
}
