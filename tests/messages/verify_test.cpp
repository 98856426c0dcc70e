#include <gtest/gtest.h>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/verify.hpp"
#include "nostr_test_util.hpp"

namespace graspd::nostr {
namespace {

// BIP-340 test-vectors.csv (bitcoin/bips, bip-0340/test-vectors.csv, final
// even-Y version), all 15 rows.
struct Bip340Vector {
  int index;
  const char* secret_key;  // empty when the row has none
  const char* public_key;
  const char* aux_rand;
  const char* message;
  const char* signature;
  bool valid;
};

constexpr Bip340Vector kVectors[] = {
    {0, "0000000000000000000000000000000000000000000000000000000000000003",
     "F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9",
     "0000000000000000000000000000000000000000000000000000000000000000",
     "0000000000000000000000000000000000000000000000000000000000000000",
     "E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA8215"
     "25F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0",
     true},
    {1, "B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF",
     "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659",
     "0000000000000000000000000000000000000000000000000000000000000001",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "6896BD60EEAE296DB48A229FF71DFE071BDE413E6D43F917DC8DCF8C78DE3341"
     "8906D11AC976ABCCB20B091292BFF4EA897EFCB639EA871CFA95F6DE339E4B0A",
     true},
    {2, "C90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B14E5C9",
     "DD308AFEC5777E13121FA72B9CC1B7CC0139715309B086C960E18FD969774EB8",
     "C87AA53824B4D7AE2EB035A2B5BBBCCC080E76CDC6D1692C4B0B62D798E6D906",
     "7E2D58D8B3BCDF1ABADEC7829054F90DDA9805AAB56C77333024B9D0A508B75C",
     "5831AAEED7B44BB74E5EAB94BA9D4294C49BCF2A60728D8B4C200F50DD313C1B"
     "AB745879A5AD954A72C45A91C3A51D3C7ADEA98D82F8481E0E1E03674A6F3FB7",
     true},
    {3, "0B432B2677937381AEF05BB02A66ECD012773062CF3FA2549E44F58ED2401710",
     "25D1DFF95105F5253C4022F628A996AD3A0D95FBF21D468A1B33F8C160D8F517",
     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
     "7EB0509757E246F19449885651611CB965ECC1A187DD51B64FDA1EDC9637D5EC"
     "97582B9CB13DB3933705B32BA982AF5AF25FD78881EBB32771FC5922EFC66EA3",
     true},
    {4, "", "D69C3509BB99E412E68B0FE8544E72837DFA30746D8BE2AA65975F29D22DC7B9", "",
     "4DF3C3F68FCC83B27E9D42C90431A72499F17875C81A599B566C9889B9696703",
     "00000000000000000000003B78CE563F89A0ED9414F5AA28AD0D96D6795F9C63"
     "76AFB1548AF603B3EB45C9F8207DEE1060CB71C04E80F593060B07D28308D7F4",
     true},
    {5, "", "EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769"
     "69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B",
     false},  // public key not on the curve
    {6, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "FFF97BD5755EEEA420453A14355235D382F6472F8568A18B2F057A1460297556"
     "3CC27944640AC607CD107AE10923D9EF7A73C643E166BE5EBEAFA34B1AC553E2",
     false},  // has_even_y(R) is false
    {7, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "1FA62E331EDBC21C394792D2AB1100A7B432B013DF3F6FF4F99FCB33E0E1515F"
     "28890B3EDB6E7189B630448B515CE4F8622A954CFE545735AAEA5134FCCDB2BD",
     false},  // negated message
    {8, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769"
     "961764B3AA9B2FFCB6EF947B6887A226E8D7C93E00C5ED0C1834FF0D0C2E6DA6",
     false},  // negated s value
    {9, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "0000000000000000000000000000000000000000000000000000000000000000"
     "123DDA8328AF9C23A94C1FEECFD123BA4FB73476F0D594DCB65C6425BD186051",
     false},  // sG - eP is infinite (x(inf) as 0)
    {10, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "0000000000000000000000000000000000000000000000000000000000000001"
     "7615FBAF5AE28864013C099742DEADB4DBA87F11AC6754F93780D5A1837CF197",
     false},  // sG - eP is infinite (x(inf) as 1)
    {11, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "4A298DACAE57395A15D0795DDBFD1DCB564DA82B0F269BC70A74F8220429BA1D"
     "69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B",
     false},  // sig[0:32] is not an X coordinate on the curve
    {12, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F"
     "69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B",
     false},  // sig[0:32] is equal to field size
    {13, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769"
     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141",
     false},  // sig[32:64] is equal to curve order
    {14, "", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC30", "",
     "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
     "6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769"
     "69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B",
     false},  // public key exceeds the field size
};

template <std::size_t N>
std::array<std::uint8_t, N> bytes(std::string_view hex) {
  std::array<std::uint8_t, N> out{};
  EXPECT_TRUE(from_hex(hex, out)) << hex;
  return out;
}

class Bip340 : public ::testing::TestWithParam<Bip340Vector> {};

TEST_P(Bip340, VerifyGivesTheExpectedResult) {
  const auto& v = GetParam();
  EXPECT_EQ(schnorr_verify(bytes<64>(v.signature), bytes<32>(v.message), bytes<32>(v.public_key)),
            v.valid);
}

class Bip340Signing : public ::testing::TestWithParam<Bip340Vector> {};

TEST_P(Bip340Signing, ReproducesTheSignature) {
  const auto& v = GetParam();
  const SecretKey sk = bytes<32>(v.secret_key);
  EXPECT_EQ(pubkey_from_secret(sk), bytes<32>(v.public_key));
  const auto sig = schnorr_sign(bytes<32>(v.message), sk, bytes<32>(v.aux_rand));
  ASSERT_TRUE(sig.has_value());
  EXPECT_EQ(to_hex(*sig), to_hex(bytes<64>(v.signature)));
}

TEST_P(Bip340, EventVerificationAgreesWithTheVector) {
  // The same check through the Event API (the cached pubkey path).
  const auto& v = GetParam();
  Event ev;
  ev.id = bytes<32>(v.message);
  ev.pubkey = bytes<32>(v.public_key);
  ev.sig = bytes<64>(v.signature);
  EXPECT_EQ(verify_signature(ev), v.valid);
  EXPECT_EQ(verify_signature(ev), v.valid) << "second call (cache hit)";
  EXPECT_EQ(detail::verify_signature_uncached(ev), v.valid);
}

std::string vector_name(const ::testing::TestParamInfo<Bip340Vector>& info) {
  return "v" + std::to_string(info.param.index);
}

INSTANTIATE_TEST_SUITE_P(OfficialVectors, Bip340, ::testing::ValuesIn(kVectors), vector_name);
// Only vectors 0-3 carry a secret key and aux_rand.
INSTANTIATE_TEST_SUITE_P(OfficialVectors, Bip340Signing,
                         ::testing::ValuesIn(std::begin(kVectors), std::begin(kVectors) + 4),
                         vector_name);

TEST(Verify, SignedEventChecksOk) {
  const Event ev = testing::signed_note("hello");
  EXPECT_EQ(ev.id, compute_id(ev));
  EXPECT_EQ(ev.pubkey, pubkey_from_secret(testing::test_secret_key()));
  EXPECT_TRUE(verify_signature(ev));
  EXPECT_EQ(check_event(ev), EventCheck::ok);
  EXPECT_STREQ(describe(EventCheck::ok), "");
}

TEST(Verify, TamperedContentIsBadId) {
  Event ev = testing::signed_note("hello");
  ev.content = "hellO";
  EXPECT_EQ(check_event(ev), EventCheck::bad_id);
  EXPECT_STREQ(describe(EventCheck::bad_id), "invalid: event id does not match");
}

TEST(Verify, TamperedSignatureIsBadSig) {
  Event ev = testing::signed_note("hello");
  ev.sig[10] ^= 1;
  EXPECT_EQ(check_event(ev), EventCheck::bad_sig);
  EXPECT_FALSE(verify_signature(ev));
}

TEST(Verify, OtherAuthorIsBadSig) {
  Event ev = testing::signed_note("hello");
  ev.pubkey = *pubkey_from_secret(testing::test_secret_key(0x22));
  ev.id = compute_id(ev);
  EXPECT_EQ(check_event(ev), EventCheck::bad_sig);
}

TEST(Verify, InvalidPubkeyIsRejectedNotCrashing) {
  Event ev = testing::signed_note("hello");
  ev.pubkey.fill(0xff);  // exceeds the field size
  EXPECT_FALSE(verify_signature(ev));
  EXPECT_FALSE(verify_signature(ev));
}

TEST(Verify, CacheCollisionsStayCorrect) {
  // Many authors map to the same slots: results must not leak between keys.
  for (std::uint8_t k = 1; k < 40; ++k) {
    const Event ev = sign_event(testing::unsigned_event("x"), testing::test_secret_key(k));
    EXPECT_TRUE(verify_signature(ev));
    Event forged = ev;
    forged.pubkey = *pubkey_from_secret(testing::test_secret_key(static_cast<std::uint8_t>(k + 1)));
    EXPECT_FALSE(verify_signature(forged));
  }
}

TEST(Verify, InvalidSecretKeys) {
  SecretKey zero{};
  EXPECT_FALSE(pubkey_from_secret(zero).has_value());
  EXPECT_THROW(sign_event(testing::unsigned_event("x"), zero), std::invalid_argument);
  SecretKey order = bytes<32>("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141");
  EXPECT_FALSE(pubkey_from_secret(order).has_value());
}

}  // namespace
}  // namespace graspd::nostr
