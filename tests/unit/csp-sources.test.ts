// LOUPE_CONNECT_SRC: which extra connect-src values a build accepts (scripts/lib/csp.ts).
import { describe, expect, it } from 'vitest';
import { contentSecurityPolicy, extraConnectSources } from '../../scripts/lib/csp';

describe('extraConnectSources', () => {
  it('takes origins, wildcard hosts, a port or every port of a host', () => {
    expect(
      extraConnectSources(
        'https://data.example.org, https://*.my-uni.edu http://127.0.0.1:8080 http://127.0.0.1:*',
      ),
    ).toEqual([
      'https://data.example.org',
      'https://*.my-uni.edu',
      'http://127.0.0.1:8080',
      'http://127.0.0.1:*',
    ]);
    expect(extraConnectSources(undefined)).toEqual([]);
  });

  it('refuses what is not an origin: a bare *, a keyword, a path, another scheme', () => {
    for (const bad of ['*', "'self'", 'https:', 'https://a.org/path', 'ftp://a.org', 'http://a.org:8*'])
      expect(() => extraConnectSources(bad)).toThrow(/LOUPE_CONNECT_SRC: .* is not an origin/);
  });

  it('puts them in connect-src only', () => {
    const policy = contentSecurityPolicy({ extraConnect: ['http://127.0.0.1:*'] });
    const connect = policy.split('; ').find((d) => d.startsWith('connect-src '));
    expect(connect).toContain(' http://127.0.0.1:*');
    expect(policy.split('; ').filter((d) => d.includes('127.0.0.1'))).toHaveLength(1);
  });
});
