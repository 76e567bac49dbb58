package registry

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// conflictRefusal is the 409 for other bytes under a published version: the
// message, and both digests as fields, so a client names them without
// parsing prose (client.ConflictError).
func conflictRefusal(e *landing.VersionConflictError) answer.Answer {
	return jsonAnswer(http.StatusConflict, client.PublishRefusal{
		Error: e.Error(), PublishedSHA256: e.ExistingSHA256, GivenSHA256: e.GivenSHA256,
	})
}

// unknownTierRefusal is the 400 for a tier the plan ladder does not have,
// naming the known ones in the message and as a field
// (client.UnknownTierError).
func unknownTierRefusal(tier string, known []string) answer.Answer {
	if known == nil {
		known = []string{} // present in the body: the ladder is empty
	}
	return jsonAnswer(http.StatusBadRequest, client.PublishRefusal{
		Error: fmt.Sprintf("unknown tier %q; the known tiers are %s (or none, for the baseline)", tier, strings.Join(known, ", ")),
		Tier:  tier, KnownTiers: known,
	})
}
