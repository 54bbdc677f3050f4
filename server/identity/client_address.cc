#include "server/identity/client_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <utility>

#include "absl/base/const_init.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/mutex.h"
#include "core/quote.h"

namespace ptoserve {

namespace {

std::string AddressText(const std::array<uint8_t, 16>& a) {
  char text[INET6_ADDRSTRLEN] = "";
  Endpoint e;
  e.address = a;
  if (IsMappedV4(e)) {
    inet_ntop(AF_INET, a.data() + 12, text, sizeof text);
  } else {
    inet_ntop(AF_INET6, a.data(), text, sizeof text);
  }
  return text;
}

// An IPv4 or IPv6 address in text, IPv4 as IPv4-mapped.
bool ParseAddress(absl::string_view text, std::array<uint8_t, 16>* out) {
  const std::string host(absl::StripSuffix(absl::StripPrefix(text, "["), "]"));
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    *out = MappedV4(v4);
    return true;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    std::copy(v6.s6_addr, v6.s6_addr + 16, out->begin());
    return true;
  }
  return false;
}

absl::Mutex trusted_mu(absl::kConstInit);
std::vector<AddressPrefix>& Trusted()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(trusted_mu) {
  static auto* trusted = new std::vector<AddressPrefix>();
  return *trusted;
}

}  // namespace

std::string AddressClient(const Endpoint& e) {
  if (IsMappedV4(e)) return absl::StrCat("address ", AddressText(e.address));
  std::array<uint8_t, 16> prefix = e.address;
  std::fill(prefix.begin() + 8, prefix.end(), 0);
  return absl::StrCat("address ", AddressText(prefix), "/64");
}

bool AddressPrefix::Contains(const std::array<uint8_t, 16>& a) const {
  for (int bit = 0; bit < bits; ++bit) {
    const uint8_t mask = static_cast<uint8_t>(0x80 >> (bit % 8));
    if ((a[bit / 8] & mask) != (address[bit / 8] & mask)) return false;
  }
  return true;
}

absl::StatusOr<std::vector<AddressPrefix>> ParseAddressPrefixes(
    absl::string_view list) {
  std::vector<AddressPrefix> prefixes;
  for (absl::string_view entry :
       absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    const std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(entry, absl::MaxSplits('/', 1));
    AddressPrefix p;
    int bits = -1;
    const bool parsed = ParseAddress(parts.first, &p.address);
    Endpoint e;
    e.address = p.address;
    const int most = parsed && IsMappedV4(e) ? 32 : 128;
    if (!parsed ||
        (!parts.second.empty() &&
         (!absl::SimpleAtoi(parts.second, &bits) || bits < 0 || bits > most))) {
      return absl::InvalidArgumentError(
          absl::StrCat(ShortQuote(entry),
                       " is not an address or a prefix (192.0.2.7, "
                       "10.0.0.0/8, 2001:db8::/32)"));
    }
    p.bits = parts.second.empty() ? 128 : bits + (most == 32 ? 96 : 0);
    prefixes.push_back(p);
  }
  return prefixes;
}

void TrustProxies(std::vector<AddressPrefix> proxies) {
  MutexLock lock(&trusted_mu);
  Trusted() = std::move(proxies);
}

bool IsTrustedProxy(const Endpoint& e) {
  MutexLock lock(&trusted_mu);
  return std::any_of(
      Trusted().begin(), Trusted().end(),
      [&](const AddressPrefix& p) { return p.Contains(e.address); });
}

std::string ProxyConnectionClient(const Endpoint& e) {
  return IsMappedV4(e)
             ? absl::StrCat("proxy ", AddressText(e.address), ":", e.port)
             : absl::StrCat("proxy [", AddressText(e.address), "]:", e.port);
}

std::string ForwardedClient(absl::string_view connection_client,
                            absl::string_view forwarded_for) {
  absl::string_view proxy = connection_client;
  if (!absl::ConsumePrefix(&proxy, "proxy ")) {
    return std::string(connection_client);
  }
  // The last address is the one the proxy appended: the others are
  // whatever the caller sent.
  absl::string_view last = forwarded_for.substr(forwarded_for.rfind(',') + 1);
  Endpoint e;
  if (ParseAddress(absl::StripAsciiWhitespace(last), &e.address)) {
    return AddressClient(e);
  }
  // None named: the proxy's own calls (its health checks), one client.
  const std::string host(proxy.substr(0, proxy.rfind(':')));
  if (ParseAddress(host, &e.address)) return AddressClient(e);
  return std::string(connection_client);
}

}  // namespace ptoserve
