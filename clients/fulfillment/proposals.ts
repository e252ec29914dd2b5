// Two fields the design needs are proposals upstream and not on the real wire yet: BMI
// spec.instance_type (20) and ClusterVersion spec.disk_image (7). A server without them drops them
// silently, so every value written there is also recorded where today's service keeps it, and every
// read falls back to that record:
//   - instance type: also the label osac.openshift.io/instance-type on the BMI;
//   - disk image: the BMI gets spec.image = {source_type: "registry", source_ref: <DiskImage source_ref>}
//     (the only image field the service interprets today) plus the DiskImage id in the annotation
//     osac.openshift.io/disk-image; a ClusterVersion without spec.disk_image may name its DiskImage
//     (id or name) in the same annotation, which admins set until the field exists.
import { Filter } from "./filter";
import type { ResourceApi } from "./api";
import type {
  BareMetalInstance, BareMetalInstanceImage, BareMetalInstanceOut, ClusterVersionOut, DiskImage, DiskImageOut,
} from "./types";

export const INSTANCE_TYPE_LABEL = "osac.openshift.io/instance-type";
export const DISK_IMAGE_ANNOTATION = "osac.openshift.io/disk-image";

/** Sets the proposed field and its label fallback. */
export function withInstanceType(bmi: BareMetalInstance, instanceType: string): BareMetalInstance {
  return {
    ...bmi,
    metadata: { ...bmi.metadata, labels: { ...bmi.metadata?.labels, [INSTANCE_TYPE_LABEL]: instanceType } },
    spec: { ...bmi.spec, instance_type: instanceType },
  };
}

export function instanceTypeOf(bmi: BareMetalInstanceOut): string | undefined {
  return bmi.spec?.instance_type || bmi.metadata?.labels[INSTANCE_TYPE_LABEL] || undefined;
}

/**
 * Whether the server stores spec.instance_type, judged from a Get of a BMI it created with the field
 * set. Never from a Create response: a server that does not know a field echoes it there and drops it
 * on storage (fulfillment-api.md §11).
 */
export async function storesInstanceType(
  bmis: Pick<ResourceApi<BareMetalInstance, BareMetalInstanceOut>, "get">,
  created: BareMetalInstanceOut,
): Promise<boolean> {
  const asked = created.metadata?.labels[INSTANCE_TYPE_LABEL];
  if (!asked) return false; // not created through withInstanceType: nothing to judge by
  const stored = await bmis.get(created.id);
  return stored.spec?.instance_type === asked;
}

/** The image the current service understands, plus the DiskImage id for later readers. */
export function withDiskImage(bmi: BareMetalInstance, diskImage: DiskImageOut): BareMetalInstance {
  const image: BareMetalInstanceImage = { source_type: "registry", source_ref: diskImage.spec?.source_ref ?? "" };
  return {
    ...bmi,
    metadata: { ...bmi.metadata, annotations: { ...bmi.metadata?.annotations, [DISK_IMAGE_ANNOTATION]: diskImage.id } },
    spec: { ...bmi.spec, image },
  };
}

export function diskImageIdOf(bmi: BareMetalInstanceOut): string | undefined {
  return bmi.metadata?.annotations[DISK_IMAGE_ANNOTATION] || undefined;
}

/** spec.disk_image when the server kept it, else the annotation (an id or a name). */
export function diskImageRefOf(cv: ClusterVersionOut): { id: string; name: string } | undefined {
  const ref = cv.spec?.disk_image;
  if (ref && (ref.id || ref.name)) return { id: ref.id, name: ref.name };
  const annotated = cv.metadata?.annotations[DISK_IMAGE_ANNOTATION];
  return annotated ? { id: annotated, name: annotated } : undefined;
}

/**
 * The DiskImage a ClusterVersion points at, or undefined when it names none or the image does not
 * exist (the caller reports RHCOSImageNotFound and creates no BMI). Tries the id first, then the name.
 */
export async function resolveDiskImage(
  diskImages: Pick<ResourceApi<DiskImage, DiskImageOut>, "list">,
  cv: ClusterVersionOut,
): Promise<DiskImageOut | undefined> {
  const ref = diskImageRefOf(cv);
  if (!ref) return undefined;
  if (ref.id) {
    const byId = await diskImages.list({ filter: Filter.idEquals(ref.id), limit: 1 });
    if (byId.items[0]) return byId.items[0];
  }
  if (!ref.name) return undefined;
  const byName = await diskImages.list({ filter: Filter.and(Filter.nameEquals(ref.name), Filter.notDeleted()), limit: 2 });
  // A name can match in several tenants for an admin caller; ambiguity is treated as "not found".
  return byName.items.length === 1 ? byName.items[0] : undefined;
}
