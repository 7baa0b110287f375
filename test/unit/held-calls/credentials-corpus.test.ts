/** Redaction over a corpus of credential formats in their usual contexts, and of look-alikes that must survive. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { redactCredentials } from '../../../src/held-calls/redact.js';
import { CREDENTIALS, LOOKALIKES } from '../../fixtures/credentials-corpus.js';

describe('every credential of the corpus is redacted', () => {
  for (const c of CREDENTIALS) {
    test(c.name, () => {
      assert.ok(c.text.includes(c.secret), 'the case is well formed');
      const out = redactCredentials(c.text);
      assert.ok(!out.includes(c.secret), `the secret survived: ${out}`);
      assert.match(out, /\[REDACTED:[a-z0-9-]+\]/);
    });
  }
});

describe('look-alikes come through unchanged', () => {
  for (const c of LOOKALIKES) {
    test(c.name, () => {
      assert.equal(redactCredentials(c.text), c.text);
    });
  }
});

test('the whole corpus in one text: no secret survives, and redacting again changes nothing', () => {
  // Look-alikes first: a private key cut off before its END line takes all the key-like text after it.
  const text = [...LOOKALIKES.map((c) => c.text), ...CREDENTIALS.map((c) => c.text)].join('\n\n');
  const out = redactCredentials(text);
  for (const c of CREDENTIALS) assert.ok(!out.includes(c.secret), c.name);
  for (const c of LOOKALIKES) assert.ok(out.includes(c.text), c.name);
  assert.equal(redactCredentials(out), out);
});
