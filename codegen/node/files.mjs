// Reading a document file under the dialect's limits (documents.mjs parses the text):
// the part of the Node view of agilerl/files/documents.py that needs a file system, kept apart so
// the browser bundle (playground/) takes the rest.

import { closeSync, fstatSync, openSync, readSync } from "node:fs";

import { DocumentError, MAX_DOCUMENT_BYTES, parseDocument } from "./documents.mjs";

/** Offset of the first byte of `bytes` that does not start valid UTF-8 (as Python finds it). */
function invalidUtf8(bytes) {
  for (let index = 0; index < bytes.length;) {
    const lead = bytes[index];
    if (lead < 0x80) {
      index += 1;
      continue;
    }
    let [count, low, high] = [0, 0x80, 0xbf];
    if (lead >= 0xc2 && lead <= 0xdf) count = 1;
    else if (lead >= 0xe0 && lead <= 0xef) {
      count = 2;
      if (lead === 0xe0) low = 0xa0;
      if (lead === 0xed) high = 0x9f; // no surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      count = 3;
      if (lead === 0xf0) low = 0x90;
      if (lead === 0xf4) high = 0x8f;
    } else return index;
    for (let next = 1; next <= count; next += 1) {
      const byte = bytes[index + next];
      const [min, max] = next === 1 ? [low, high] : [0x80, 0xbf];
      if (byte === undefined || byte < min || byte > max) return index;
    }
    index += count + 1;
  }
  return -1;
}

/** At most MAX_DOCUMENT_BYTES + 1 bytes of `file`, refusing a larger one before reading. */
function readBounded(file) {
  const fd = openSync(file, "r");
  try {
    const { size } = fstatSync(fd);
    const buffer = Buffer.alloc(size > MAX_DOCUMENT_BYTES ? 0 : MAX_DOCUMENT_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    const seen = Math.max(size, length); // pipes and devices report no size
    if (seen > MAX_DOCUMENT_BYTES) {
      throw new DocumentError(
        `${file}: larger than the ${MAX_DOCUMENT_BYTES} bytes a document may have` +
          ` (${seen} bytes or more)`,
      );
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The text of `file` (within the size limit, UTF-8); a DocumentError names the file. */
export function readText(file) {
  let bytes;
  try {
    bytes = readBounded(file);
  } catch (error) {
    if (error instanceof DocumentError) throw error;
    throw new DocumentError(`${file}: cannot read: ${error.message}`);
  }
  let text;
  try {
    text = UTF8.decode(bytes);
  } catch {
    const offset = invalidUtf8(bytes);
    const byte = bytes[offset].toString(16).padStart(2, "0");
    throw new DocumentError(`${file}: not UTF-8 text (byte 0x${byte} at offset ${offset})`);
  }
  return text;
}

/** The document in `file`; a DocumentError names `file:line:column` (or the file). */
export function loadDocument(file) {
  const text = readText(file);
  try {
    return parseDocument(text);
  } catch (error) {
    if (!(error instanceof DocumentError)) throw error;
    throw new DocumentError(`${file}:${error.message}`);
  }
}
