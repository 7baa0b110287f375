// The cells the approval tables start with. Requests (Pending, History): when (linking to the detail), requester,
// type and subject, and the justification as text. Grants (Granted, History): developer, and type and subject
// linking to the detail.
import { Time } from '../../components/ui';
import { REQUEST_TYPE_LABEL, subjectOf } from '../../format';
import { Link } from '../../router';
import type { AccessRequest, Grant } from '../../types';

export function RequestCells({ request: r }: { request: AccessRequest }) {
  return (
    <>
      <td>
        <Link to={`/approvals/requests/${encodeURIComponent(r.id)}`}>
          <Time iso={r.createdAt} />
        </Link>
      </td>
      <td>{r.requester}</td>
      <td>
        <div>{REQUEST_TYPE_LABEL[r.type]}</div>
        <div className="muted">{subjectOf(r)}</div>
      </td>
      <td>
        <p className="user-text justification">{r.justification}</p>
      </td>
    </>
  );
}

export function GrantCells({ grant: g }: { grant: Grant }) {
  return (
    <>
      <td>{g.developerId}</td>
      <td>
        <Link to={`/approvals/grants/${encodeURIComponent(g.id)}`}>{REQUEST_TYPE_LABEL[g.type]}</Link>
        <div className="muted">{subjectOf(g)}</div>
      </td>
    </>
  );
}
