import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createAddressPolicy, isAllowEntry, toNonPublicReason } from "./address-policy.ts";

describe("address policy", () => {
  test("public unicast addresses pass", () => {
    for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "172.32.0.1"]) {
      assert.equal(toNonPublicReason(address), null, address);
    }
  });

  test("loopback, private, link-local, metadata, multicast and reserved addresses are refused", () => {
    const refused = {
      "127.0.0.1": "a loopback address",
      "127.8.9.10": "a loopback address",
      "10.1.2.3": "a private address",
      "172.16.0.1": "a private address",
      "192.168.1.1": "a private address",
      "100.64.0.1": "a carrier-grade NAT address",
      "169.254.169.254": "a link-local address (cloud metadata lives here)",
      "0.0.0.0": "an unspecified address",
      "224.0.0.1": "a multicast address",
      "255.255.255.255": "a reserved address",
      "::1": "a loopback address",
      "::": "an unspecified address",
      "fd00:ec2::254": "a private (unique-local) address",
      "fe80::1": "a link-local address",
      "ff02::1": "a multicast address",
      "::ffff:127.0.0.1": "a loopback address",
      "::ffff:a9fe:a9fe": "a link-local address (cloud metadata lives here)",
      "64:ff9b::10.0.0.1": "a private address",
    };
    for (const [address, reason] of Object.entries(refused)) {
      assert.equal(toNonPublicReason(address), reason, address);
    }
  });

  test("IPv6 addresses that carry an IPv4 address are judged by it or refused", () => {
    const refused = {
      "::7f00:1": "an IPv4-compatible address (deprecated)",
      "::127.0.0.1": "an IPv4-compatible address (deprecated)",
      "::808:808": "an IPv4-compatible address (deprecated)",
      "::ffff:0:7f00:1": "an IPv4-translated address",
      "::ffff:0:8.8.8.8": "an IPv4-translated address",
      "64:ff9b:1::7f00:1": "a loopback address",
      "64:ff9b:1::a9fe:a9fe": "a link-local address (cloud metadata lives here)",
      "64:ff9b:1:a00:1:100:808:808": "a private address",
      "2002:7f00:1::": "a loopback address",
      "2002:a9fe:a9fe::1": "a link-local address (cloud metadata lives here)",
      "2002:c0a8:101::1": "a private address",
    };
    for (const [address, reason] of Object.entries(refused)) {
      assert.equal(toNonPublicReason(address), reason, address);
    }
    for (const address of ["2002:808:808::1", "64:ff9b:1::808:808", "64:ff9b::8.8.8.8"]) {
      assert.equal(toNonPublicReason(address), null, address);
    }
  });

  test("the allow-list admits a named host or a CIDR range, nothing else", () => {
    const policy = createAddressPolicy(["wiki.corp.example", "10.20.0.0/16", "fd12::/16"]);
    assert.equal(policy.refusal("WIKI.corp.example", "10.9.9.9"), null);
    assert.equal(policy.refusal("other.corp.example", "10.20.3.4"), null);
    assert.equal(policy.refusal("x", "fd12::1"), null);
    assert.equal(
      policy.refusal("other.corp.example", "10.21.0.1"),
      "other.corp.example resolves to 10.21.0.1, a private address",
    );
    assert.equal(
      createAddressPolicy().refusal("evil.example", "127.0.0.1"),
      "evil.example resolves to 127.0.0.1, a loopback address",
    );
    // Without the allow-list (a redirect from a public page), only public addresses pass.
    assert.equal(
      policy.refusal("wiki.corp.example", "10.9.9.9", false),
      "wiki.corp.example resolves to 10.9.9.9, a private address (allowHosts applies to the URL asked for and to redirects from allowed hosts, not to redirects from public pages)",
    );
    assert.equal(policy.refusal("wiki.corp.example", "8.8.8.8", false), null);
    assert.ok(policy.allows("wiki.corp.example", "8.8.8.8"));
    assert.ok(!policy.allows("public.example", "8.8.8.8"));
  });

  test("allow-list entries are validated", () => {
    assert.ok(isAllowEntry("wiki.corp.example"));
    assert.ok(isAllowEntry("10.0.0.0/8"));
    assert.ok(isAllowEntry("::1"));
    assert.ok(!isAllowEntry("10.0.0.0/33"));
    assert.ok(!isAllowEntry("http://wiki"));
  });
});
